// Package webtracking_test runs the web-tracking example pipeline in
// process: Segment-style requests to the HTTP tracking source land in the
// built-in log, in the JSON-lines file with emails hashed, and in the
// Iceberg table partitioned by the event's day, each event once.
package webtracking_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/internal/exampletest"
)

// connectors are those the example uses.
var connectors = []connect.Connector{httptrack.Connector(), file.Connector(), iceberg.Connector()}

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	l0, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l0.Addr().String()
	l0.Close()
	p := exampletest.Load(t, "pipeline.yaml", map[string]string{"TRIBUTARY_DATA_DIR": dir, "TRACKING_WRITE_KEY": "dev-key", "TRACKING_LISTEN": addr}, connectors...)
	run := exampletest.Run(t, p, connectors...)

	// Two days of events, sent the way the SDKs send them.
	var batch []string
	for i := range 100 {
		day := 1 + i%2
		batch = append(batch, fmt.Sprintf(`{"type":"track","userId":"u-%d","event":"Viewed","messageId":"m-%d","timestamp":"2026-03-0%dT10:00:00Z","properties":{"n":%d}}`, i%7, i, day, i))
	}
	batch = append(batch, `{"type":"identify","userId":"u-1","messageId":"m-id","timestamp":"2026-03-01T11:00:00Z","traits":{"email":"ann@example.com"}}`)
	// Each request is retried until the source listens and accepts it.
	post := func(path, body string) {
		t.Helper()
		exampletest.WaitFor(t, 30*time.Second, "POST "+path, func() error {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+addr+path, strings.NewReader(body))
			req.SetBasicAuth("dev-key", "")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("%s: %s", resp.Status, b)
			}
			return nil
		})
	}
	post("/v1/batch", `{"batch":[`+strings.Join(batch, ",")+`]}`)
	post("/v1/track", `{"userId":"u-9","event":"Signed Up","messageId":"m-single","timestamp":"2026-03-02T12:00:00Z"}`)
	post("/v1/track", `{"userId":"u-9","event":"Signed Up","messageId":"m-single","timestamp":"2026-03-02T12:00:00Z"}`) // an SDK's retry
	const want = 102

	exampletest.WaitFor(t, 60*time.Second, "the sinks commit all events", func() error {
		if err := errors.Join(run.CaughtUp("tracking-lake", want), run.CaughtUp("tracking-file", want)); err != nil {
			st, _ := run.Worker.Status("tracking-lake")
			return fmt.Errorf("%w\ntracking-lake: %+v", err, st)
		}
		return nil
	})
	run.Shutdown()

	lines, err := os.ReadFile(filepath.Join(dir, "out", "tracking.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n")); n != want {
		t.Errorf("the file has %d lines, want %d", n, want)
	}
	if bytes.Contains(lines, []byte("ann@example.com")) {
		t.Error("the file shows an email in clear")
	}

	tbl := exampletest.IcebergTable(t, exampletest.IcebergCatalog(t, filepath.Join(dir, "iceberg", "catalog.db")), "web.tracking")
	if got := tbl.Spec().String(); !strings.Contains(got, "timestamp_day") {
		t.Errorf("partition spec %s, want day(timestamp)", got)
	}
	seen := map[string]int{}
	for _, r := range exampletest.IcebergRows(t, tbl, "messageId", "traits") {
		seen[r[0]]++
		if strings.Contains(r[1], "ann@example.com") {
			t.Error("the table shows an email in clear")
		}
	}
	if len(seen) != want {
		t.Errorf("%d distinct messageIds in the table, want %d", len(seen), want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("messageId %s is %d times in the table", id, n)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "timestamp_day=*"))
	if len(parts) != 2 {
		t.Errorf("%d timestamp_day=… partitions, want 2 (two days of events)", len(parts))
	}
}
