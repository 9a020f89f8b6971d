package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestReport_SnapshotProgressThenStreaming(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY, v text)",
		"INSERT INTO a SELECT g, 'x' FROM generate_series(1, 2000) g",
		"ANALYZE a",
	)
	if got := (&Source{}).Report(); got.Phase != "" || len(got.Progress) != 0 {
		t.Fatalf("Report before Open = %+v, want empty", got)
	}
	s := openSource(t, db, map[string]string{"snapshot.chunk.size": "100", "snapshot.workers": "1", "slot.retained.warn": "1"}, nil)

	// Nobody reads: the runner stops after a few chunks, mid-snapshot.
	var rep connect.Report
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep = s.Report()
		if rep.Phase == phaseSnapshot && len(rep.Progress) == 1 && rep.Progress[0].Done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot progress within 30s: %+v", rep)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p := rep.Progress[0]
	if p.Name != "public.a" || p.Unit != "rows" || p.Total != 2000 || p.Done >= 2000 || p.Done%100 != 0 {
		t.Errorf("mid-snapshot progress = %+v, want public.a, a multiple of 100 rows below the estimate 2000", p)
	}
	if _, ok := rep.Gauges["slot_retained_wal_bytes"]; !ok {
		t.Errorf("mid-snapshot gauges %v lack slot_retained_wal_bytes", rep.Gauges)
	}

	readUntil(t, s, 30*time.Second, func(recs []connect.Record) bool {
		p, _ := decodePosition(lastPosition(recs))
		return len(recs) >= 2000 && p.Snapshot == nil
	})
	db.exec(t, "INSERT INTO a VALUES (-1, 'y')")
	readUntil(t, s, 30*time.Second, untilMarker("a"))
	deadline = time.Now().Add(10 * time.Second)
	for {
		rep = s.Report()
		if rep.Gauges["number_of_committed_transactions"] >= 1 && rep.Gauges["slot_retained_wal_bytes"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("report after streaming a transaction: %+v", rep)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rep.Phase != phaseStreaming || len(rep.Progress) != 0 {
		t.Errorf("phase %q, progress %v; want streaming and no progress", rep.Phase, rep.Progress)
	}
	if rep.Gauges["snapshot_rows_scanned"] != 2000 || rep.Gauges["total_number_of_events_seen"] != 1 {
		t.Errorf("gauges %v: want 2000 snapshot rows and 1 event seen", rep.Gauges)
	}
	if ms, ok := rep.Gauges["milliseconds_behind_source"]; !ok || ms < 0 || ms > 60000 {
		t.Errorf("milliseconds_behind_source = %v (%v), want a small reading", ms, ok)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "slot.retained.warn") {
		t.Errorf("warnings %q, want the retained-WAL warning (threshold 1 byte)", rep.Warnings)
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 1 << 30: "1.0 GiB", 5 << 40: "5.0 TiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}
