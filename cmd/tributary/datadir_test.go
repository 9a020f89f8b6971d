package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	var stderr syncBuffer
	go func() {
		done <- run(ctx, []string{"--data-dir", flagDir, "run", file, "--rest-addr", addr}, strings.NewReader(""), &syncBuffer{}, &stderr)
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
