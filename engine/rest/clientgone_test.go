package rest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that goes away during a long poll (a consumer that ends, Ctrl-C)
// is not an error of the worker: it is logged at debug, not at ERROR.
func TestReadRecords_ClientGoneIsNotAnError(t *testing.T) {
	srv, _, logs, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/topics/t/partitions/0/records?offset=0&max_wait_ms=10000", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the read answered %s before its client went away", resp.Status)
	}
	srv.Close() // waits for the handler to finish
	if got := logs.String(); strings.Contains(got, "level=ERROR") {
		t.Errorf("a client going away was logged as an error:\n%s", got)
	}
}
