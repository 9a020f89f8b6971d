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
