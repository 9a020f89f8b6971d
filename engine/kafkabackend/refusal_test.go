package kafkabackend

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/connect"
)

// TestRefusal: what the cluster refuses for good is Permanent, with a hint;
// what may pass on a retry is left as it is.
func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		err       error
		permanent bool
	}{
		{kerr.InvalidRecord, true},
		{kerr.MessageTooLarge, true},
		{kerr.RecordListTooLarge, true},
		{kerr.NotLeaderForPartition, false},
		{kerr.RequestTimedOut, false},
		{errors.New("dial tcp: connection refused"), false},
	} {
		err := refusal(fmt.Errorf("produce to t: %w", tt.err))
		if got := connect.IsPermanent(err); got != tt.permanent {
			t.Errorf("%v: permanent %v, want %v", tt.err, got, tt.permanent)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("%v: the cause is lost: %v", tt.err, err)
		}
	}
}
