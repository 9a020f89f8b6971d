package httptrack

import "testing"

// TestSource_AcksLazilyOnlyWithDedup checks that the source lets the
// worker store positions lazily only when its clients are answered on
// Durable (dedup on); with dedup off they wait for Ack, which must be
// prompt.
func TestSource_AcksLazilyOnlyWithDedup(t *testing.T) {
	for _, tt := range []struct {
		window string
		want   bool
	}{{"24h", true}, {"0", false}} {
		h := open(t, map[string]string{"dedup.window": tt.window}, nil)
		if got := h.src.AcksLazily(); got != tt.want {
			t.Errorf("dedup.window=%s: AcksLazily() = %v, want %v", tt.window, got, tt.want)
		}
	}
}
