// Package quickstart_test runs the quickstart pipeline in process: the
// generator's events land in the built-in log and in the JSON-lines file,
// referrers masked, both under the quickstart's own data directory.
package quickstart_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/internal/exampletest"
	"github.com/tributary-io/tributary/pipelines"
)

// connectors are those the quickstart and the web-tracking example use.
var connectors = []connect.Connector{generator.Connector(), httptrack.Connector(), file.Connector(), iceberg.Connector()}

func load(t *testing.T, path string, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	return exampletest.Load(t, path, env, connectors...)
}

// The quickstart keeps its log and its output apart from the other
// examples', whose sinks read the same topic web.tracking: run one after
// the other with the defaults, the web-tracking example must not deliver
// the quickstart's synthetic events. TRIBUTARY_DATA_DIR moves both the log
// and the output file.
func TestExample_OwnDataDir(t *testing.T) {
	qs := load(t, "pipeline.yaml", map[string]string{})
	wt := load(t, "../web-tracking/pipeline.yaml", map[string]string{"TRACKING_WRITE_KEY": "k"})
	if qs.Log.Dir == wt.Log.Dir {
		t.Errorf("quickstart and web-tracking share the log %s", qs.Log.Dir)
	}
	if want := "./data/quickstart"; qs.Log.Dir != want {
		t.Errorf("log dir %s, want %s", qs.Log.Dir, want)
	}
	if got, want := qs.Sinks[0].Config["path"], "./data/quickstart/out/events.jsonl"; got != want {
		t.Errorf("file sink path %s, want %s", got, want)
	}

	qs = load(t, "pipeline.yaml", map[string]string{"TRIBUTARY_DATA_DIR": "/srv/qs"})
	if qs.Log.Dir != "/srv/qs" {
		t.Errorf("with TRIBUTARY_DATA_DIR the log dir is %s", qs.Log.Dir)
	}
	if got, want := qs.Sinks[0].Config["path"], "/srv/qs/out/events.jsonl"; got != want {
		t.Errorf("with TRIBUTARY_DATA_DIR the file sink path is %s, want %s", got, want)
	}
}

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	p := load(t, "pipeline.yaml", map[string]string{"TRIBUTARY_DATA_DIR": dir})
	run := exampletest.Run(t, p, generator.Connector(), file.Connector())

	// The generator runs at 1000 events/s: wait until the file sink has
	// committed a few hundred of them.
	const want = 300
	exampletest.WaitFor(t, 30*time.Second, "the file sink commits 300 events", func() error {
		if n := run.Committed("events-file"); n < want {
			lags, err := run.Log.Groups().Describe("events-file")
			return fmt.Errorf("%d committed: %+v %v", n, lags, err)
		}
		return nil
	})
	run.Shutdown()
	n := run.Committed("events-file")

	f, err := os.Open(filepath.Join(dir, "out", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, referrers := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		var event struct {
			Event      string         `json:"event"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(sc.Bytes(), &event); err != nil {
			t.Fatalf("line %d: %v: %s", lines, err, sc.Bytes())
		}
		if event.Event == "" {
			t.Fatalf("line %d is not a tracking event: %s", lines, sc.Bytes())
		}
		if r, ok := event.Properties["referrer"]; ok {
			referrers++
			if r != "****" {
				t.Errorf("line %d: referrer %v is not masked", lines, r)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if int64(lines) < n {
		t.Errorf("the file has %d lines, the sink committed %d", lines, n)
	}
	if referrers == 0 {
		t.Error("no event with a referrer: the mask was not exercised")
	}
}
