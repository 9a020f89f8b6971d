package stdout

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite generated docs")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writes records each call to Write.
type writes struct {
	calls []string
	err   error
}

func (w *writes) Write(p []byte) (int, error) {
	w.calls = append(w.calls, string(p))
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

func open(t *testing.T, w *writes, values map[string]string) *Sink {
	t.Helper()
	s := NewSink(w)
	if err := s.Open(t.Context(), connect.Config{Values: values, Spec: spec()}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

var records = []connect.Record{
	{Topic: "web.tracking", Partition: 1, Offset: 7, Key: []byte("user-7"), Value: []byte(`{"seq": 7}`),
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	{Topic: "web.tracking", Partition: 1, Offset: 8, Key: []byte(`{"id":1}`)}, // a tombstone
	{Topic: "raw", Value: []byte("plain\ttext")},
}

func TestConnector_Registered(t *testing.T) {
	c, err := connect.Default().Lookup(connect.KindSink, Name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name || c.Description == "" || c.Version == "" || c.NewSink == nil {
		t.Errorf("registered connector = %+v", c)
	}
}

func TestSink_Write_Value(t *testing.T) {
	var w writes
	s := open(t, &w, nil)
	if err := s.Write(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	want := "{\"seq\": 7}\nplain\ttext\n"
	if len(w.calls) != 1 || w.calls[0] != want {
		t.Errorf("writes = %q, want one write of %q", w.calls, want)
	}
	// A batch of tombstones prints nothing.
	if err := s.Write(t.Context(), records[1:2]); err != nil || len(w.calls) != 1 {
		t.Errorf("Write of a tombstone = %v, writes %q", err, w.calls)
	}
}

func TestSink_Write_JSON(t *testing.T) {
	var w writes
	s := open(t, &w, map[string]string{"format": "json"})
	if err := s.Write(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"web.tracking","partition":1,"offset":7,"timestamp":"2026-01-02T03:04:05Z","key":"user-7","value":{"seq":7}}
{"topic":"web.tracking","partition":1,"offset":8,"timestamp":null,"key":{"id":1},"value":null}
{"topic":"raw","partition":0,"offset":0,"timestamp":null,"key":null,"value":"plain\ttext"}
`
	if len(w.calls) != 1 || w.calls[0] != want {
		t.Fatalf("writes = %q, want one write of\n%s", w.calls, want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(w.calls[0], "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
}

func TestSink_Open_BadFormat(t *testing.T) {
	err := NewSink(&writes{}).Open(t.Context(), connect.Config{Values: map[string]string{"format": "xml"}})
	var fe connect.FieldError
	if !errors.As(err, &fe) || fe.Param != "format" || !strings.Contains(err.Error(), "value, json") {
		t.Errorf("Open with format=xml = %v, want a FieldError listing the formats", err)
	}
}

func TestSink_Write_Errors(t *testing.T) {
	w := &writes{err: errors.New("broken pipe")}
	s := open(t, w, nil)
	if err := s.Write(t.Context(), records); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("Write to a broken writer = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Write(ctx, records); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a canceled context = %v", err)
	}
	s.Close(t.Context())
	if err := s.Write(t.Context(), records); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func ExampleSink() {
	ctx := context.Background()
	sink := Connector().NewSink() // prints to os.Stdout
	if err := sink.Open(ctx, connect.Config{Values: map[string]string{"format": "json"}}); err != nil {
		panic(err)
	}
	defer sink.Close(ctx)
	sink.Write(ctx, []connect.Record{
		{Topic: "web.tracking", Partition: 2, Offset: 41, Key: []byte("user-7"), Value: []byte(`{"seq":7,"event":"click"}`)},
	})
	// Output:
	// {"topic":"web.tracking","partition":2,"offset":41,"timestamp":null,"key":"user-7","value":{"seq":7,"event":"click"}}
}
