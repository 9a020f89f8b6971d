package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// TestRESTClient_CallErrors: a worker that took the call but did not
// answer in time, or a call interrupted by a signal, is not reported as a
// worker that may not be there; a refused connection is.
func TestRESTClient_CallErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, never answer
		}
	}()
	const hint = "is `tributary run` serving"

	c := newRESTClient(ln.Addr().String())
	c.http.Timeout = 200 * time.Millisecond
	err = c.do(t.Context(), "PUT", "/connectors/wh/stop", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 200ms") || strings.Contains(err.Error(), hint) {
		t.Errorf("timeout: %v", err)
	}

	c = newRESTClient(ln.Addr().String())
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(200*time.Millisecond, func() { cancel(context.Canceled) })
	err = c.do(ctx, "PUT", "/connectors/wh/stop", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "interrupted while waiting for the worker's answer") || strings.Contains(err.Error(), hint) {
		t.Errorf("interrupted: %v", err)
	}

	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := refused.Addr().String()
	refused.Close()
	err = newRESTClient(addr).do(t.Context(), "GET", "/connectors", nil, nil)
	if err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("refused: %v", err)
	}
	// The call is named once, not again by net/http's own wrapping.
	if n := strings.Count(err.Error(), "http://"+addr+"/connectors"); n != 1 {
		t.Errorf("refused: %v names the URL %d times, want once", err, n)
	}
}

// A connector the worker does not know is an error that says how to list
// the ones it does.
func TestConnectors_UnknownNameSaysHowToList(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "empty.yaml")
	writeFile(t, file, "version: 1\nname: empty\n")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--data-dir", filepath.Join(dir, "data"), "run", file, "--rest-addr", addr}, strings.NewReader(""), new(syncbuf.Buffer), new(syncbuf.Buffer))
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, err := tributary(t, dir, "", "connectors", "list", "--server", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, args := range [][]string{
		{"connectors", "status", "nosuch"},
		{"connectors", "pause", "nosuch"},
		{"connectors", "offsets", "nosuch"},
	} {
		err := mustFail(t, dir, "", append(args, "--server", addr)...)
		wantContains(t, strings.Join(args, " "), err.Error(), "Connector nosuch not found", "tributary connectors list")
	}
}
