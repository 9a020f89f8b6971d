package connect

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestErrorMarkers(t *testing.T) {
	base := errors.New("http 400: invalid email")
	tests := []struct {
		name           string
		err            error
		bad, retryable bool
		index          int
		after          time.Duration
	}{
		{"plain", base, false, false, 0, 0},
		{"bad record", BadRecord(base), true, false, -1, 0},
		{"bad record at", BadRecordAt(3, base), true, false, 3, 0},
		{"wrapped bad record", fmt.Errorf("write batch: %w", BadRecordAt(7, base)), true, false, 7, 0},
		{"retryable", Retryable(base), false, true, 0, 0},
		{"retry after", fmt.Errorf("post: %w", RetryAfter(2*time.Second, base)), false, true, 0, 2 * time.Second},
		{"bad record wins", Retryable(BadRecord(base)), true, false, -1, 0},
		{"context canceled", context.Canceled, false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsBadRecord(tt.err); got != tt.bad {
				t.Errorf("IsBadRecord = %v, want %v", got, tt.bad)
			}
			if got := IsRetryable(tt.err); got != tt.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tt.retryable)
			}
			var bre *BadRecordError
			if errors.As(tt.err, &bre) && bre.Index != tt.index {
				t.Errorf("Index = %d, want %d", bre.Index, tt.index)
			}
			var re *RetryableError
			if errors.As(tt.err, &re) && re.After != tt.after {
				t.Errorf("After = %v, want %v", re.After, tt.after)
			}
			if tt.err != context.Canceled && !errors.Is(tt.err, base) {
				t.Error("the marker hides the original error from errors.Is")
			}
		})
	}
	if BadRecord(nil) != nil || BadRecordAt(1, nil) != nil || Retryable(nil) != nil || RetryAfter(time.Second, nil) != nil {
		t.Error("marking nil did not return nil")
	}
	if got := BadRecord(base).Error(); got != base.Error() {
		t.Errorf("message = %q, want the original %q", got, base.Error())
	}
}
