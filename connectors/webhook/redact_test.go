package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// The connector's spec masks the credentials in its settings wherever the
// worker shows them (REST, status): a sensitive header's credential, a
// URL's credential-like query parameters and password.
func TestSpec_RedactsCredentialsInSettings(t *testing.T) {
	got := spec().Mask(map[string]string{
		"url":     "https://user:pw123456@api.example.com/v1/contacts?hapikey=SECRETKEY123&api_key=AK123456&limit=10",
		"headers": "Authorization: Bearer TOKEN12345\nX-Trace: on, X-Api-Token: tok-98765",
		"method":  "POST",
	})
	for _, secret := range []string{"SECRETKEY123", "AK123456", "pw123456", "TOKEN12345", "tok-98765"} {
		for k, v := range got {
			if strings.Contains(v, secret) {
				t.Errorf("%s shows %s: %q", k, secret, v)
			}
		}
	}
	for k, want := range map[string]string{
		"url":     "https://user:" + connect.Masked + "@api.example.com/v1/contacts?hapikey=" + connect.Masked + "&api_key=" + connect.Masked + "&limit=10",
		"headers": "Authorization: Bearer " + connect.Masked + "\nX-Trace: on, X-Api-Token: " + connect.Masked,
		"method":  "POST",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// A delivery error names the URL; its key does not reach the task's trace
// or a dead letter's __connect.errors.exception.message.
func TestSink_ErrorsMaskURLCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every request fails with the URL in the error
	s := open(t, fast(map[string]string{"url": "http://" + addr + "/x?hapikey=SECRETKEY123", "max.attempts": "1"}))
	err = s.Write(t.Context(), events(keys(1), 1))
	if err == nil {
		t.Fatal("a delivery to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "SECRETKEY123") {
		t.Errorf("error shows the key: %v", err)
	}
	if !strings.Contains(err.Error(), "hapikey="+connect.Masked) {
		t.Errorf("error %q does not show where the key was masked", err)
	}
}

// TestRetryLog_NamesTheSinkAndMasks: the debug line of a retry says which
// sink of which pipeline retries, and masks the credentials it quotes.
func TestRetryLog_NamesTheSinkAndMasks(t *testing.T) {
	var tries atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if tries.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "down; your token was "+r.Header.Get("Authorization"))
		}
	})
	var buf bytes.Buffer
	var mu sync.Mutex
	s := Connector().NewSink().(*Sink)
	s.logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	values := fast(map[string]string{"url": rc.srv.URL, "headers": "Authorization: Bearer sekret-token-1234"})
	cfg := connect.Config{Pipeline: "shop", Connector: "crm", Values: spec().WithDefaults(values), Spec: spec()}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"webhook delivery failed; retrying", "connector=webhook", "pipeline=shop", "sink=crm", "Bearer ********"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sekret-token-1234") {
		t.Errorf("the log shows the token:\n%s", out)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
