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

// TestUnavailableColumns: the header's value is a JSON array, so names
// with commas and quotes come back as they were.
func TestUnavailableColumns(t *testing.T) {
	names := []string{"vec", `a,b`, `"q"`}
	h := UnavailableColumns(names)
	if h.Key != UnavailableColumnsHeader || string(h.Value) != `["vec","a,b","\"q\""]` {
		t.Errorf("header = %s: %s", h.Key, h.Value)
	}
	got, err := ParseUnavailableColumns(h.Value)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(names) {
		t.Errorf("parsed %q (%v), want %q", got, err, names)
	}
	if _, err := ParseUnavailableColumns([]byte("vec,amount")); err == nil {
		t.Error("a comma list parsed without error")
	}
}
