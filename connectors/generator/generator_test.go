package generator

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite golden files and generated docs")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a source with the given values and position; idle, when not
// zero, shortens how long Read waits before returning an empty batch.
func open(t *testing.T, values map[string]string, pos connect.Position, idle time.Duration) *Source {
	t.Helper()
	s := Connector().NewSource().(*Source)
	s.idle = idle
	cfg := connect.Config{Pipeline: "p", Connector: "gen", Values: values, Spec: spec(), Position: pos}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// read reads until it has n records.
func read(t *testing.T, s *Source, n int) []connect.Record {
	t.Helper()
	var out []connect.Record
	for len(out) < n {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, recs...)
	}
	return out
}

// decoded is a generated value as JSON decodes it.
type decoded struct {
	Seq        uint64         `json:"seq"`
	UserID     string         `json:"user_id"`
	Event      string         `json:"event"`
	Properties map[string]any `json:"properties"`
	Timestamp  string         `json:"timestamp"`
	Pad        string         `json:"pad"`
}

func decode(t *testing.T, r connect.Record) decoded {
	t.Helper()
	var d decoded
	dec := json.NewDecoder(strings.NewReader(string(r.Value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("value %s: %v", r.Value, err)
	}
	return d
}

// content returns a value without its timestamp, the part of an event that
// depends on (seed, seq) alone.
func content(t *testing.T, r connect.Record) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatalf("value %s: %v", r.Value, err)
	}
	delete(m, "timestamp")
	b, _ := json.Marshal(m)
	return string(b)
}

func TestConnector_Registered(t *testing.T) {
	c, err := connect.Default().Lookup(connect.KindSource, Name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name || c.Description == "" || c.Version == "" || c.NewSource == nil {
		t.Errorf("registered connector = %+v", c)
	}
	if err := connect.NewRegistry().Register(Connector()); err != nil {
		t.Errorf("Connector() does not register: %v", err)
	}
}

func TestSource_Read_Event(t *testing.T) {
	s := open(t, map[string]string{"rate": "0", "users": "10", "batch.size": "1000"}, nil, 0)
	before := time.Now().Add(-time.Second)
	recs := read(t, s, 1000)
	kinds := map[string]int{}
	for i, r := range recs {
		d := decode(t, r)
		seq := uint64(i + 1)
		if d.Seq != seq {
			t.Fatalf("record %d: seq %d, want %d", i, d.Seq, seq)
		}
		if got, want := string(r.Position), fmt.Sprintf(`{"seq":%d}`, seq); got != want {
			t.Fatalf("record %d: position %s, want %s", i, got, want)
		}
		if string(r.Key) != d.UserID {
			t.Fatalf("record %d: key %q, user_id %q", i, r.Key, d.UserID)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(d.UserID, "user-"))
		if !strings.HasPrefix(d.UserID, "user-") || err != nil || n < 1 || n > 10 {
			t.Fatalf("record %d: user_id %q is not user-1 to user-10", i, d.UserID)
		}
		ts, err := time.Parse(time.RFC3339Nano, d.Timestamp)
		if err != nil || !ts.Equal(r.Timestamp) || ts.Before(before) || ts.After(time.Now()) {
			t.Fatalf("record %d: timestamp %q (%v), record timestamp %v", i, d.Timestamp, err, r.Timestamp)
		}
		if _, ok := d.Properties["path"].(string); !ok {
			t.Fatalf("record %d: no path in %s", i, r.Value)
		}
		if d.Event == "purchase" {
			if amount, ok := d.Properties["amount"].(float64); !ok || amount <= 0 {
				t.Fatalf("record %d: purchase without an amount: %s", i, r.Value)
			}
		}
		if d.Pad != "" {
			t.Fatalf("record %d: padded without value.size: %s", i, r.Value)
		}
		kinds[d.Event]++
	}
	for _, k := range eventKinds {
		if kinds[k.name] == 0 {
			t.Errorf("no %s among 1000 events: %v", k.name, kinds)
		}
	}
	if kinds["page_view"] < kinds["purchase"] {
		t.Errorf("more purchases than page views: %v", kinds)
	}
}

func TestSource_Read_Deterministic(t *testing.T) {
	values := map[string]string{"rate": "0", "seed": "7", "batch.size": "40"}
	a := read(t, open(t, values, nil, 0), 100)
	b := read(t, open(t, values, nil, 0), 100)
	other := read(t, open(t, map[string]string{"rate": "0", "seed": "8"}, nil, 0), 100)
	same := 0
	for i := range a {
		if content(t, a[i]) != content(t, b[i]) || string(a[i].Key) != string(b[i].Key) {
			t.Fatalf("seq %d differs with the same seed:\n%s\n%s", i+1, a[i].Value, b[i].Value)
		}
		if content(t, a[i]) == content(t, other[i]) {
			same++
		}
	}
	if same > 10 {
		t.Errorf("seeds 7 and 8 give %d of 100 identical events", same)
	}
}

func TestSource_Open_Resume(t *testing.T) {
	values := map[string]string{"rate": "0", "seed": "3", "batch.size": "25"}
	first := read(t, open(t, values, nil, 0), 100)

	s := open(t, values, connect.Position(`{"seq":60}`), 0)
	if got := s.Acked(); got != 60 {
		t.Errorf("Acked after resuming at 60 = %d, want 60", got)
	}
	resumed := read(t, s, 40)[:40]
	for i, r := range resumed {
		want := first[60+i]
		if got := decode(t, r).Seq; got != uint64(61+i) {
			t.Fatalf("resumed record %d: seq %d, want %d", i, got, 61+i)
		}
		if content(t, r) != content(t, want) || string(r.Position) != string(want.Position) {
			t.Fatalf("resumed seq %d differs:\n%s\n%s", 61+i, r.Value, want.Value)
		}
	}
}

func TestSource_Open_BadPosition(t *testing.T) {
	for _, pos := range []string{`garbage`, `{}`, `{"seq":-1}`, `{"seq":18446744073709551615}`} {
		s := Connector().NewSource()
		err := s.Open(t.Context(), connect.Config{Values: map[string]string{}, Position: connect.Position(pos)})
		if err == nil || !strings.Contains(err.Error(), "resume generator") {
			t.Errorf("Open at %s: err = %v, want a resume error", pos, err)
		}
	}
}

func TestSource_Open_BadConfig(t *testing.T) {
	tests := []struct {
		values map[string]string
		param  string
	}{
		{map[string]string{"rate": "-1"}, "rate"},
		{map[string]string{"rate": "NaN"}, "rate"},
		{map[string]string{"rate": "fast"}, "rate"},
		{map[string]string{"users": "0"}, "users"},
		{map[string]string{"batch.size": "0"}, "batch.size"},
		{map[string]string{"max.events": "-5"}, "max.events"},
		{map[string]string{"value.size": "1GiB"}, "value.size"},
		{map[string]string{"seed": "1.5"}, "seed"},
	}
	for _, tt := range tests {
		err := Connector().NewSource().Open(t.Context(), connect.Config{Values: tt.values})
		var fe connect.FieldError
		if !errors.As(err, &fe) || fe.Param != tt.param {
			t.Errorf("Open with %v: err = %v, want a FieldError for %s", tt.values, err, tt.param)
		}
	}
}

func TestSource_Read_BatchSize(t *testing.T) {
	s := open(t, map[string]string{"rate": "0", "batch.size": "7"}, nil, 0)
	for i := range 3 {
		recs, err := s.Read(t.Context())
		if err != nil || len(recs) != 7 {
			t.Fatalf("Read %d: %d records, %v; want 7", i, len(recs), err)
		}
		if got, want := string(recs[0].Position), fmt.Sprintf(`{"seq":%d}`, 7*i+1); got != want {
			t.Fatalf("Read %d starts at %s, want %s", i, got, want)
		}
	}
}

func TestSource_Read_MaxEvents(t *testing.T) {
	s := open(t, map[string]string{"rate": "0", "batch.size": "4", "max.events": "10"}, nil, 10*time.Millisecond)
	var sizes []int
	for range 5 {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(recs))
	}
	if got := fmt.Sprint(sizes); got != "[4 4 2 0 0]" {
		t.Errorf("batch sizes = %s, want [4 4 2 0 0]", got)
	}

	// max.events counts seqs, so a restart after seq 8 makes 2 more.
	s = open(t, map[string]string{"rate": "0", "max.events": "10"}, connect.Position(`{"seq":8}`), 10*time.Millisecond)
	recs, err := s.Read(t.Context())
	if err != nil || len(recs) != 2 || string(recs[1].Position) != `{"seq":10}` {
		t.Errorf("Read after resuming at 8 of 10: %d records, %v", len(recs), err)
	}
}

func TestSource_Read_ValueSize(t *testing.T) {
	s := open(t, map[string]string{"rate": "0", "value.size": "1KiB", "batch.size": "200"}, nil, 0)
	for _, r := range read(t, s, 200) {
		if len(r.Value) != 1024 {
			t.Fatalf("value is %d bytes, want 1024: %s", len(r.Value), r.Value)
		}
		if d := decode(t, r); len(d.Pad) < 700 {
			t.Fatalf("pad is %d bytes", len(d.Pad))
		}
	}
	// A size smaller than the event leaves it unpadded.
	s = open(t, map[string]string{"rate": "0", "value.size": "10"}, nil, 0)
	if d := decode(t, read(t, s, 1)[0]); d.Pad != "" {
		t.Errorf("padded to 10 bytes: %q", d.Pad)
	}
}

// TestSource_Read_Rate checks the pace against the clock: after every Read,
// the source has returned every event due when the call began, and none
// that was not due when it returned. Both bounds hold however slowly the
// test runs.
func TestSource_Read_Rate(t *testing.T) {
	const rate = 1000
	before := time.Now()
	s := open(t, map[string]string{"rate": strconv.Itoa(rate), "batch.size": "100000"}, nil, 0)
	opened := time.Now()
	var got, empty int
	for time.Since(opened) < 300*time.Millisecond {
		began := time.Since(opened)
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			empty++
		}
		for i, r := range recs {
			if want := fmt.Sprintf(`{"seq":%d}`, got+i+1); string(r.Position) != want {
				t.Fatalf("position %s, want %s", r.Position, want)
			}
		}
		got += len(recs)
		if lo := int(began.Seconds() * rate); got < lo {
			t.Fatalf("%d events after %v, want at least %d", got, began, lo)
		}
		if elapsed := time.Since(before); got > int(elapsed.Seconds()*rate) {
			t.Fatalf("%d events after %v, want at most %d", got, elapsed, int(elapsed.Seconds()*rate))
		}
	}
	if empty > 0 {
		t.Errorf("%d empty batches while events were due every millisecond", empty)
	}
	t.Logf("%d events in %v at rate %d", got, time.Since(opened), rate)
}

func TestSource_Read_Idle(t *testing.T) {
	s := open(t, map[string]string{"rate": "0.01"}, nil, 20*time.Millisecond)
	recs, err := s.Read(t.Context())
	if err != nil || len(recs) != 0 {
		t.Errorf("Read with nothing due = %d records, %v; want an empty batch", len(recs), err)
	}
}

func TestSource_Read_Canceled(t *testing.T) {
	s := open(t, map[string]string{"rate": "0.01"}, nil, time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read = %v, want context.DeadlineExceeded", err)
	}
	if _, err := s.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read after the context is done = %v, want context.DeadlineExceeded", err)
	}
}

func TestSource_Ack(t *testing.T) {
	s := open(t, map[string]string{"rate": "0", "batch.size": "5"}, nil, 0)
	recs := read(t, s, 5)
	if got := s.Acked(); got != 0 {
		t.Errorf("Acked before any ack = %d", got)
	}
	if err := s.Ack(t.Context(), recs[4].Position); err != nil {
		t.Fatal(err)
	}
	if got := s.Acked(); got != 5 {
		t.Errorf("Acked = %d, want 5", got)
	}
	if err := s.Ack(t.Context(), connect.Position("nope")); err == nil {
		t.Error("Ack of a malformed position succeeded")
	}
}

// TestEvent_Golden pins the events of seed 42, so that a change to the
// generator that would change the events of a seed is seen.
func TestEvent_Golden(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC)
	var b strings.Builder
	for seq := uint64(1); seq <= 12; seq++ {
		b.Write(newEvent(42, seq, 1000).appendJSON(nil, ts, 0))
		b.WriteByte('\n')
	}
	b.Write(newEvent(42, 13, 1000).appendJSON(nil, ts, 300))
	b.WriteByte('\n')
	golden(t, filepath.Join("testdata", "seed42.golden.jsonl"), b.String())
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func ExampleSource() {
	ctx := context.Background()
	src := Connector().NewSource()
	cfg := connect.Config{Values: map[string]string{"rate": "0", "seed": "42", "batch.size": "3"}}
	if err := src.Open(ctx, cfg); err != nil {
		panic(err)
	}
	defer src.Close(ctx)
	recs, err := src.Read(ctx)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		var ev struct{ Event string }
		json.Unmarshal(r.Value, &ev)
		fmt.Printf("%s %s %s\n", r.Position, r.Key, ev.Event)
	}
	// Output:
	// {"seq":1} user-421 page_view
	// {"seq":2} user-562 click
	// {"seq":3} user-769 page_view
}

// BenchmarkSource_Read measures a read of a batch of 500 events of 1 KiB,
// as bench/engine's end-to-end phase makes them.
func BenchmarkSource_Read(b *testing.B) {
	s := &Source{}
	cfg := connect.Config{Values: map[string]string{"rate": "0", "batch.size": "500", "value.size": "1KiB"}}
	if err := s.Open(b.Context(), cfg); err != nil {
		b.Fatal(err)
	}
	defer s.Close(b.Context())
	b.ReportAllocs()
	b.SetBytes(500 * 1024)
	for b.Loop() {
		if _, err := s.Read(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// The bounds Open enforces are declared in the spec, so `tributary validate`
// and the REST validate endpoint report them before anything runs.
func TestSpec_DeclaresOpensBounds(t *testing.T) {
	for key, bad := range map[string]string{"rate": "-1", "users": "0", "batch.size": "0", "max.events": "-3"} {
		errs := spec().Validate(map[string]string{key: bad})
		if len(errs) != 1 || errs[0].Param != key {
			t.Errorf("%s=%s: Validate = %v, want one error for %s", key, bad, errs, key)
		}
		src := &Source{}
		if err := src.Open(t.Context(), connect.Config{Spec: spec(), Values: map[string]string{key: bad}}); err == nil {
			t.Errorf("%s=%s: Open accepted what the spec should refuse", key, bad)
		}
	}
}

// TestAppendText_MatchesOneCharacterPerSixBits checks the unrolled padding
// loops against the plain definition at every length around their steps:
// each draw of the stream gives ten characters, six bits each from the
// lowest up, and a short tail takes the low bits of one more draw.
func TestAppendText_MatchesOneCharacterPerSixBits(t *testing.T) {
	for n := 0; n <= 130; n++ {
		r := newRNG(7, uint64(n))
		ref := newRNG(7, uint64(n))
		got := r.appendText([]byte("x"), n)
		want := []byte("x")
		for len(want)-1 < n {
			x := ref.next()
			for k := 0; k < 10 && len(want)-1 < n; k++ {
				want = append(want, padAlphabet[x&63])
				x >>= 6
			}
		}
		if string(got) != string(want) {
			t.Fatalf("appendText(%d) = %q, want %q", n, got, want)
		}
		if r.state != ref.state {
			t.Fatalf("appendText(%d) left the stream at %x, want %x", n, r.state, ref.state)
		}
	}
}

// BenchmarkAppendText makes the padding of a 1 KiB event, most of the
// generator's work per event.
func BenchmarkAppendText(b *testing.B) {
	r := newRNG(1, 1)
	buf := make([]byte, 0, 1024)
	b.SetBytes(900)
	for b.Loop() {
		buf = r.appendText(buf[:0], 900)
	}
}
