package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
)

// connectors offsets NAME --set and --reset move a stopped sink, as the
// REST API's PATCH and DELETE do; on a running one the worker's answer
// (stop it first) is the error.
func TestConnectorsOffsets_SetAndReset(t *testing.T) {
	dir := t.TempDir()
	l, err := tlog.Open(tlog.Options{Dir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	cat := newCatalog()
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, nil), Connectors: cat.connectors, Transforms: cat.transformFactory()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.New(w, l, "test", nil))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []tlog.Record{{Value: []byte("1")}, {Value: []byte("2")}, {Value: []byte("3")}}); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	cli := func(args ...string) (string, error) {
		out, _, err := tributary(t, dir, "", append(args, "--server", addr)...)
		return out, err
	}
	spec := engine.ConnectorSpec{Name: "s", Kind: "sink", Connector: "file", Topics: []string{"t"}, Config: map[string]string{"path": filepath.Join(dir, "out.jsonl")}}
	if err := w.Start(t.Context(), spec, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	const doc = `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":2}}]}`
	if _, err := cli("connectors", "offsets", "s", "--set", doc); err == nil || !strings.Contains(err.Error(), "STOPPED") || !strings.Contains(err.Error(), "(CLI: tributary connectors stop s)") {
		t.Errorf("--set on a running sink: %v, want the worker's refusal", err)
	}
	if _, err := cli("connectors", "stop", "s"); err != nil {
		t.Fatal(err)
	}
	// A partition the topic does not have, or an offset past its end, is
	// refused: nothing would be read there, or the sink would start over.
	for set, want := range map[string]string{
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":7},"offset":{"kafka_offset":42}}]}`:  "t has no partition 7 (it has 1)",
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":{"kafka_offset":999}}]}`: "offset 999 is past the log end offset 3 of t-0",
	} {
		if _, err := cli("connectors", "offsets", "s", "--set", set); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: %v, want an error saying %q", set, err, want)
		}
	}
	file := filepath.Join(dir, "offsets.json")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{doc, file} {
		if out, err := cli("connectors", "offsets", "s", "--set", set); err != nil || !strings.Contains(out, "s: ") {
			t.Fatalf("--set %s: %q, %v", set, out, err)
		}
		out, err := cli("connectors", "offsets", "s")
		if err != nil || !strings.Contains(out, `"kafka_offset": 2`) {
			t.Fatalf("offsets after --set: %q, %v", out, err)
		}
	}
	if _, err := cli("connectors", "offsets", "s", "--reset"); err != nil {
		t.Fatalf("--reset: %v", err)
	}
	if out, err := cli("connectors", "offsets", "s"); err != nil || strings.Contains(out, `"kafka_offset": 2`) {
		t.Errorf("offsets after --reset: %q, %v", out, err)
	}
}
