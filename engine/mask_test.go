package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/syncbuf"
	tlog "github.com/tributary-io/tributary/log"
)

// leakySource fails to open with an error that quotes its settings, as a
// driver's error may quote a DSN or a URL.
type leakySource struct{}

func (leakySource) Open(ctx context.Context, cfg connect.Config) error {
	return fmt.Errorf("connect to %s as %s: refused", cfg.Values["url"], cfg.Values["password"])
}
func (leakySource) Read(ctx context.Context) ([]connect.Record, error)  { return nil, nil }
func (leakySource) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (leakySource) Close(ctx context.Context) error                     { return nil }

// leakySink refuses every record with an error quoting its token.
type leakySink struct{ token string }

func (s *leakySink) Open(ctx context.Context, cfg connect.Config) error {
	s.token = cfg.Values["token"]
	return nil
}
func (s *leakySink) Write(ctx context.Context, recs []connect.Record) error {
	return connect.BadRecordAt(0, fmt.Errorf("POST https://crm.example/hook?key=%s: 400 Bad Request", s.token))
}
func (s *leakySink) Close(ctx context.Context) error { return nil }

// TestWorker_ConnectorErrorsDoNotShowSecrets: a connector's error may quote
// its secret settings; the task's trace (REST status), the worker's log
// lines and the dead letters' error headers show them masked: a secret
// parameter, the part of a value the spec's Redact masks, and a value that
// came from the environment.
func TestWorker_ConnectorErrorsDoNotShowSecrets(t *testing.T) {
	const (
		password = "pw-7f3a9c"          // a secret parameter
		urlKey   = "k-51d0e2"           // masked by Redact in a URL
		envToken = "tok-from-env-88b41" // from ${TOKEN}: a secret by origin
	)
	logs := new(syncbuf.Buffer)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "leaky-source", Kind: connect.KindSource, Version: "test",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "password", Type: connect.TypePassword, Description: "secret"},
			{Name: "url", Type: connect.TypeString, Description: "with a key"},
		}, Redact: func(name, value string) string {
			if name == "url" {
				return strings.ReplaceAll(value, urlKey, connect.Masked)
			}
			return value
		}},
		NewSource: func() connect.Source { return leakySource{} }})
	reg.MustRegister(connect.Connector{Name: "leaky-sink", Kind: connect.KindSink, Version: "test",
		Spec:    connect.Spec{Params: []connect.Param{{Name: "token", Type: connect.TypeString, Description: "plain, but from the environment here"}}},
		NewSink: func() connect.Sink { return &leakySink{} }})
	w, err := NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Connectors: reg, Logger: logger,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	ctx := t.Context()
	if err := w.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "leaky-source", Topic: "t",
		Config: map[string]string{"password": password, "url": "https://db.example/?key=" + urlKey}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "in", 0, []tlog.Record{{Value: []byte(`{"a":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "leaky-sink", Topics: []string{"in"},
		Config: map[string]string{"token": envToken}, Secrets: []string{"token"},
		Errors: ErrorPolicy{Tolerance: "all", Retries: 1, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond, DeadLetterTopic: "dlq"}}, ""); err != nil {
		t.Fatal(err)
	}

	var trace string
	waitFor(t, "the source's task to fail with a trace", func() bool {
		st, _ := w.Status("src")
		if len(st.Tasks) == 1 && st.Tasks[0].Trace != "" {
			trace = st.Tasks[0].Trace
			return true
		}
		return false
	})
	waitFor(t, "a dead letter", func() bool {
		_, end, err := l.Offsets("dlq", 0)
		return err == nil && end == 1
	})
	res, err := l.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var headers strings.Builder
	for _, h := range res.Records[0].Headers {
		fmt.Fprintf(&headers, "%s=%s\n", h.Key, h.Value)
	}
	for what, text := range map[string]string{"trace": trace, "logs": logs.String(), "dead-letter headers": headers.String()} {
		for _, secret := range []string{password, urlKey, envToken} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s show the secret %q:\n%s", what, secret, text)
			}
		}
	}
	if !strings.Contains(trace, "refused") || !strings.Contains(trace, connect.Masked) {
		t.Errorf("trace = %q: want the error, its secrets masked", trace)
	}
	if !strings.Contains(headers.String(), "400 Bad Request") {
		t.Errorf("dead-letter headers lost the error:\n%s", headers.String())
	}
}
