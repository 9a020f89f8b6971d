package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
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
}
