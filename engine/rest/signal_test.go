package rest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// snapSource is an idle source that takes snapshot signals.
type snapSource struct {
	idleSource
	mu     *sync.Mutex
	tables *[]string
}

func (s snapSource) Report() connect.Report { return connect.Report{Phase: "streaming"} }
func (s snapSource) ExecuteSnapshot(ctx context.Context, tables []string) error {
	if slices.Contains(tables, "public.nope") {
		return fmt.Errorf("execute snapshot: %q matches no captured table: %w", "public.nope", connect.ErrBadSignal)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.tables = append(*s.tables, tables...)
	return nil
}
func (s snapSource) StopSnapshot(ctx context.Context, tables []string) error { return nil }

func TestREST_SnapshotSignal(t *testing.T) {
	srv, w, _ := newTestServer(t)
	var mu sync.Mutex
	var got []string
	w.Registry().MustRegister(connect.Connector{Name: "snap", Kind: connect.KindSource, Version: "1",
		NewSource: func() connect.Source { return snapSource{mu: &mu, tables: &got} }})
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"cdc","config":{"connector.class":"snap","topic":"t"}}`); code != 201 {
		t.Fatalf("create = %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"execute-snapshot","data":{"data-collections":["public.orders"],"type":"incremental"}}`)
		if code == 202 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("signal = %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond) // until the task runs
	}
	mu.Lock()
	if strings.Join(got, ",") != "public.orders" {
		t.Fatalf("source got tables %v", got)
	}
	mu.Unlock()
	// A table the source does not capture is the sender's mistake.
	if code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"execute-snapshot","data":{"data-collections":["public.nope"]}}`); code != 400 || !strings.Contains(body, "matches no captured table") {
		t.Fatalf("signal naming no captured table = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"pause-snapshot"}`); code != 400 || !strings.Contains(body, "cannot pause") {
		t.Fatalf("pause to a source that cannot pause = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"snapshot-now"}`); code != 400 || !strings.Contains(body, "resume-snapshot") {
		t.Fatalf("unknown signal = %d %s", code, body)
	}
	if code, _ := call(t, srv, "POST", "/connectors", `{"name":"plain","config":{"connector.class":"idle","topic":"t"}}`); code != 201 {
		t.Fatal("create plain")
	}
	time.Sleep(100 * time.Millisecond)
	if code, body := call(t, srv, "POST", "/connectors/plain/signals", `{"type":"execute-snapshot","data":{"data-collections":["x"]}}`); code != 400 || !strings.Contains(body, "snapshot") {
		t.Fatalf("signal to a source without snapshots = %d %s", code, body)
	}
}

// pauseSource is a snapSource that can also pause and resume.
type pauseSource struct {
	snapSource
	calls *[]string
}

func (s pauseSource) PauseSnapshot(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.calls = append(*s.calls, "pause")
	return nil
}

func (s pauseSource) ResumeSnapshot(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.calls = append(*s.calls, "resume")
	return nil
}

func TestREST_PauseResumeSnapshotSignals(t *testing.T) {
	srv, w, _ := newTestServer(t)
	var mu sync.Mutex
	var tables, calls []string
	w.Registry().MustRegister(connect.Connector{Name: "snap", Kind: connect.KindSource, Version: "1",
		NewSource: func() connect.Source {
			return pauseSource{snapSource: snapSource{mu: &mu, tables: &tables}, calls: &calls}
		}})
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"cdc","config":{"connector.class":"snap","topic":"t"}}`); code != 201 {
		t.Fatalf("create = %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"pause-snapshot"}`)
		if code == 202 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause = %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond) // until the task runs
	}
	if code, body := call(t, srv, "POST", "/connectors/cdc/signals", `{"type":"resume-snapshot","data":{}}`); code != 202 {
		t.Fatalf("resume = %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(calls, ",") != "pause,resume" {
		t.Fatalf("source got %v, want pause then resume", calls)
	}
}
