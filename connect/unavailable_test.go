package connect

import (
	"fmt"
	"testing"
)

// TestUnavailable_Forms: the placeholder forms of the default placeholder
// are Debezium's (UnchangedToastedPlaceholder; the UUID from DBZ-6720).
func TestUnavailable_Forms(t *testing.T) {
	if got, want := fmt.Sprint(UnavailableNumbers(UnavailableValue)), "[95 95 100 101 98 101 122 105 117 109 95 117 110 97 118 97 105 108 97 98 108 101 95 118 97 108 117 101]"; got != want {
		t.Errorf("UnavailableNumbers = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(UnavailableNumbers("é")), "[-61 -87]"; got != want {
		t.Errorf("UnavailableNumbers(é) = %s, want Java's signed bytes %s", got, want)
	}
	if got, want := UnavailableUUID(UnavailableValue), "b68a35a7-17ad-35b3-af2a-ae46edb4545a"; got != want {
		t.Errorf("UnavailableUUID = %s, want %s", got, want)
	}
	if got, want := UnavailableHstore(`a"b`), `{"a\"b":"a\"b"}`; got != want {
		t.Errorf("UnavailableHstore = %s, want %s", got, want)
	}
}
