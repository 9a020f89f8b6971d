package cdc

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestCheckCollections(t *testing.T) {
	captured := []string{"public.orders", "public.customers"}
	if err := CheckCollections([]string{"public.orders", `public\.cust.*`}, captured); err != nil {
		t.Fatalf("valid collections refused: %v", err)
	}
	err := CheckCollections([]string{"public.orders", "public.nope", "public.(a"}, captured)
	if !errors.Is(err, connect.ErrBadSignal) {
		t.Fatalf("err = %v, want ErrBadSignal", err)
	}
	for _, want := range []string{`"public.nope" matches no captured table (this source captures public.orders, public.customers)`, `"public.(a" is not a table name`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %s", err, want)
		}
	}
	if strings.Contains(err.Error(), `"public.orders"`) {
		t.Errorf("a matching collection is reported: %v", err)
	}
	// A name must match a whole table name, as in Debezium.
	if err := CheckCollections([]string{"orders"}, captured); err == nil {
		t.Error("a partial name matched")
	}
}

func TestNewTables(t *testing.T) {
	captured := []string{"public.a", "public.b", "public.c"}
	var skipped []string
	got := NewTables([]string{`public\.(a|b)`, "public.b", "public.nope", "public.(x", "public.c"}, captured, []string{"public.c"},
		func(p, why string) { skipped = append(skipped, p+": "+why) })
	if strings.Join(got, ",") != "public.a,public.b" {
		t.Errorf("NewTables = %v, want public.a, public.b (each once; c is in the snapshot already)", got)
	}
	if len(skipped) != 2 || !strings.HasPrefix(skipped[0], "public.nope: no captured table matches") ||
		!strings.HasPrefix(skipped[1], "public.(x: not a table name") {
		t.Errorf("skipped = %q", skipped)
	}
}

func TestSend(t *testing.T) {
	ch, done := make(chan int, 1), make(chan struct{})
	if err := Send(t.Context(), ch, done, false, "mysql", 1); err == nil || !strings.Contains(err.Error(), "initial_only") {
		t.Errorf("to a source that does not stream: %v", err)
	}
	if err := Send[int](t.Context(), nil, done, true, "mysql", 1); err == nil {
		t.Error("to a source that is not open: no error")
	}
	if err := Send(t.Context(), ch, done, true, "mysql", 7); err != nil || <-ch != 7 {
		t.Errorf("Send = %v", err)
	}
	ch <- 0 // full: the next Send waits for the loop, or the close
	close(done)
	if err := Send(t.Context(), ch, done, true, "mysql", 8); err == nil || !strings.Contains(err.Error(), "mysql source is closed") {
		t.Errorf("to a closed source: %v", err)
	}
}

func TestParseSkippedOps(t *testing.T) {
	all := []connect.Op{connect.OpCreate, connect.OpUpdate, connect.OpDelete, connect.OpTruncate, connect.OpRead, connect.OpMessage}
	for _, tc := range []struct {
		in   []string
		skip string // the ops of all that are skipped
	}{
		{[]string{SkippedOpsDefault}, "t"},
		{[]string{"none"}, ""},
		{nil, ""},
		{[]string{"c", " U ", "d"}, "cud"},
		{[]string{"t", "d"}, "dt"},
	} {
		s, err := ParseSkippedOps(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		var got string
		for _, op := range all {
			if s.Skips(op) {
				got += string(op)
			}
		}
		if got != tc.skip {
			t.Errorf("%q skips %q, want %q", tc.in, got, tc.skip)
		}
	}
	for _, bad := range [][]string{{"x"}, {"none", "t"}, {"r"}} {
		if _, err := ParseSkippedOps(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
