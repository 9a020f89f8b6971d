package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// run --data-dir puts the embedded log there, whatever log.dir says.
func TestRun_DataDirFlag(t *testing.T) {
	dir := t.TempDir()
	fileDir, flagDir := filepath.Join(dir, "from-file"), filepath.Join(dir, "from-flag")
	file := filepath.Join(dir, "pipeline.yaml")
	yaml := strings.NewReplacer("%DATA%", fileDir, "%OUT%", filepath.Join(dir, "out.jsonl")).Replace(quickstartYAML)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"--data-dir", flagDir, "run", file, "--rest-addr", addr}, strings.NewReader(""), new(syncbuf.Buffer), &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/connectors")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never answered\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(fileDir); err == nil {
		t.Errorf("the log went to log.dir %s despite --data-dir", fileDir)
	}
	if ents, err := os.ReadDir(flagDir); err != nil || len(ents) == 0 {
		t.Errorf("nothing in --data-dir %s: %v", flagDir, err)
	}
}

// A command that only reads the log (or changes what exists in it) on a
// data directory that holds no log fails, naming the directory and how to
// give the right one, instead of making an empty log there and reporting
// the topic missing: after the quickstart, whose log is in ./data/quickstart,
// a consume without --data-dir reads ./data.
func TestRun_DataDirWithoutLog(t *testing.T) {
	parent := t.TempDir()
	logDir := filepath.Join(parent, "quickstart")
	mustRun(t, logDir, "a\n", "produce", "web.tracking", "-q")

	missing := filepath.Join(parent, "typo")
	for _, args := range [][]string{
		{"consume", "web.tracking", "-e"},
		{"topics", "list"},
		{"topics", "describe"},
		{"topics", "delete", "web.tracking"},
		{"topics", "alter", "web.tracking", "--partitions", "3"},
		{"groups", "list"},
		{"groups", "describe", "--all-groups"},
		{"groups", "reset-offsets", "--group", "g", "--all-topics", "--to-earliest"},
		{"groups", "delete", "g"},
	} {
		err := mustFail(t, missing, "", args...)
		wantContains(t, fmt.Sprintf("%q on a missing directory: error", args), err.Error(), missing, "does not exist", "--data-dir", "--server")
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%q created the missing data directory %s", args, missing)
		}

		err = mustFail(t, parent, "", args...)
		wantContains(t, fmt.Sprintf("%q on the log's parent: error", args), err.Error(), "no log", "--data-dir "+logDir)
		if _, err := os.Stat(filepath.Join(parent, "meta.json")); err == nil {
			t.Fatalf("%q made a log in %s, the parent of the log", args, parent)
		}
	}

	// An empty directory is an empty log, and the commands that add to a log
	// make it where there is none.
	empty := t.TempDir()
	if out, _ := mustRun(t, empty, "", "topics", "list"); out != "" {
		t.Errorf("topics list on an empty directory = %q, want nothing", out)
	}
	locked := t.TempDir()
	if err := os.WriteFile(filepath.Join(locked, ".lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, locked, "", "groups", "list")
	mustRun(t, filepath.Join(parent, "new1"), "", "topics", "create", "t")
	mustRun(t, filepath.Join(parent, "new2"), "x\n", "produce", "t", "-q")
}
