package iceberg

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// openLogged opens a new sink instance on the environment, with extra
// settings, logging to buf.
func (e *env) openLogged(t *testing.T, buf *bytes.Buffer, extra map[string]string) *Sink {
	t.Helper()
	values := maps.Clone(e.values)
	maps.Copy(values, extra)
	s := &Sink{log: slog.New(slog.NewTextHandler(buf, nil))}
	if err := s.Open(t.Context(), connect.Config{Pipeline: "p", Connector: "lake", Values: values, Spec: spec()}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(t.Context()) })
	return s
}

func orders(p int32, from, to int64) []connect.Record {
	var out []connect.Record
	for o := from; o <= to; o++ {
		out = append(out, rec("orders", p, o, fmt.Sprintf(`{"p":%d,"o":%d}`, p, o)))
	}
	return out
}

func warnLines(buf *bytes.Buffer) []string {
	var out []string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, "level=WARN") {
			out = append(out, l)
		}
	}
	return out
}

// A sink rewound below what the table holds (connectors offsets --reset)
// skips those records, as exactly once requires, and says so: one warning
// per partition, naming the offsets and how to write them again.
func TestSink_RewoundBelowTable_WarnsOncePerPartition(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	write(t, s, append(orders(0, 0, 9), orders(1, 0, 4)...)...)
	flush(t, s)

	var log bytes.Buffer
	s2 := e.openLogged(t, &log, nil)
	write(t, s2, append(orders(0, 0, 7), orders(1, 0, 4)...)...)
	write(t, s2, orders(0, 8, 14)...)
	flush(t, s2)

	if got := e.rows(t, "default.orders", "_offset"); len(got) != 20 {
		t.Errorf("table has %d rows, want 20 (15, then offsets 10 to 14 of partition 0)", len(got))
	}
	warns := warnLines(&log)
	if len(warns) != 2 {
		t.Fatalf("%d warnings, want 2 (one per partition):\n%s", len(warns), log.String())
	}
	for i, want := range []string{"skipping offsets 0 to 9 of orders/0", "skipping offsets 0 to 4 of orders/1"} {
		if !strings.Contains(warns[i], want) || !strings.Contains(warns[i], "offsets.from.table: false") ||
			!strings.Contains(warns[i], "tributary.offsets.p.lake") {
			t.Errorf("warning %d = %s\nwant it to say %q, name the summary key and offsets.from.table: false", i, warns[i], want)
		}
	}
	if got := s2.Report().Gauges["iceberg_skipped_records"]; got != 15 {
		t.Errorf("iceberg_skipped_records = %v, want 15", got)
	}
}

// offsets.from.table: false writes what the table already holds again, and
// leaves the offsets the table stores at their highest, so that turning it
// back on skips everything the table holds.
func TestSink_OffsetsFromTableFalse_Reprocesses(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	write(t, s, orders(0, 0, 9)...)
	flush(t, s)

	var log bytes.Buffer
	s2 := e.openLogged(t, &log, map[string]string{"offsets.from.table": "false"})
	write(t, s2, orders(0, 0, 4)...)
	flush(t, s2)
	if got := e.rows(t, "default.orders", "_offset"); len(got) != 15 {
		t.Errorf("table has %d rows, want 15 (offsets 0 to 4 twice)", len(got))
	}
	warns := warnLines(&log)
	if len(warns) != 1 || !strings.Contains(warns[0], "offsets.from.table is false") || !strings.Contains(warns[0], `{\"orders\":{\"0\":9}}`) {
		t.Errorf("want one warning that offsets.from.table is false, with the table's offsets; got:\n%s", log.String())
	}
	if got := committedOffsets(e.table(t, "default.orders").Metadata(), "tributary.offsets.p.lake"); got[tp{"orders", 0}] != 9 {
		t.Errorf("table offsets after reprocessing %v, want orders/0 at 9", got)
	}

	s3 := e.open(t)
	write(t, s3, orders(0, 0, 9)...)
	flush(t, s3)
	if got := e.rows(t, "default.orders", "_offset"); len(got) != 15 {
		t.Errorf("table has %d rows, want 15 (nothing new with offsets.from.table back on)", len(got))
	}
}
