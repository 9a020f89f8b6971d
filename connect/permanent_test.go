package connect

import (
	"errors"
	"fmt"
	"testing"
)

func TestPermanent_Classify(t *testing.T) {
	base := errors.New("wal_level is replica")
	tests := []struct {
		name                      string
		err                       error
		permanent, retryable, bad bool
	}{
		{"plain", base, false, false, false},
		{"permanent", Permanent(base), true, false, false},
		{"wrapped permanent", fmt.Errorf("open source s: %w", Permanent(base)), true, false, false},
		{"permanent wins over retryable", Retryable(Permanent(base)), true, false, false},
		{"retryable over permanent", Permanent(Retryable(base)), true, false, false},
		{"bad record wins over permanent", BadRecord(Permanent(base)), false, false, true},
		{"retryable", Retryable(base), false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPermanent(tt.err); got != tt.permanent {
				t.Errorf("IsPermanent = %v, want %v", got, tt.permanent)
			}
			if got := IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tt.retryable)
			}
			if got := IsBadRecord(tt.err); got != tt.bad {
				t.Errorf("IsBadRecord = %v, want %v", got, tt.bad)
			}
			if tt.err.Error() != base.Error() && !errors.Is(tt.err, base) {
				t.Errorf("message %q lost the cause", tt.err)
			}
		})
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

func TestAttempts(t *testing.T) {
	base := errors.New("503 Service Unavailable")
	if got := Attempts(base); got != 0 {
		t.Errorf("Attempts(plain) = %d, want 0", got)
	}
	err := BadRecordAt(3, WithAttempts(2, base))
	if got := Attempts(err); got != 2 {
		t.Errorf("Attempts = %d, want 2", got)
	}
	if err.Error() != base.Error() || !IsBadRecord(err) || !errors.Is(err, base) {
		t.Errorf("WithAttempts changed the error: %v", err)
	}
	if WithAttempts(0, base) != base || WithAttempts(2, nil) != nil {
		t.Error("WithAttempts(0, err) or WithAttempts(n, nil) wrapped")
	}
}
