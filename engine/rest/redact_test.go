package rest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/webhook"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// Credentials inside a REST-created connector's settings (a webhook's
// Authorization header, a URL's hapikey) are masked in every answer, and
// PUT or PATCH of what GET showed keeps the real values.
func TestConnectorConfig_MasksCredentialsInSettings(t *testing.T) {
	logs := &bytesLog{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	reg := connect.NewRegistry()
	reg.MustRegister(webhook.Connector())
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(w, l, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	const url = "https://api.example.com/contacts?hapikey=SECRETKEY123"
	const headers = "Authorization: Bearer TOKEN12345"
	code, body := call(t, srv, "POST", "/connectors", `{"name":"crm","initial_state":"STOPPED","config":{"connector.class":"webhook","topics":"in",`+
		`"url":"`+url+`","headers":"`+headers+`"}}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	answers := []string{body}
	for _, path := range []string{"/connectors/crm", "/connectors/crm/config", "/connectors/crm/tasks", "/connectors?expand=info"} {
		_, b := call(t, srv, "GET", path, "")
		answers = append(answers, b)
	}
	for _, a := range answers {
		if strings.Contains(a, "SECRETKEY123") || strings.Contains(a, "TOKEN12345") {
			t.Errorf("an answer shows a credential: %s", a)
		}
	}
	_, shown := call(t, srv, "GET", "/connectors/crm/config", "")
	if !strings.Contains(shown, "hapikey="+connect.Masked) || !strings.Contains(shown, "Bearer "+connect.Masked) {
		t.Errorf("GET config = %s, want the credentials masked in place", shown)
	}
	for _, tt := range []struct{ method, path, body string }{
		{"PUT", "/connectors/crm/config", shown},
		{"PATCH", "/connectors/crm/config", shown},
	} {
		if code, body := call(t, srv, tt.method, tt.path, tt.body); code != 200 {
			t.Fatalf("%s of GET's answer: %d %s", tt.method, code, body)
		}
		spec, err := w.Spec("crm")
		if err != nil {
			t.Fatal(err)
		}
		if spec.Config["url"] != url || spec.Config["headers"] != headers {
			t.Errorf("after %s of GET's answer: url %q, headers %q; want the real values kept", tt.method, spec.Config["url"], spec.Config["headers"])
		}
	}
	if strings.Contains(logs.String(), "SECRETKEY123") || strings.Contains(logs.String(), "TOKEN12345") {
		t.Errorf("the log shows a credential:\n%s", logs.String())
	}
}

func newWebhookServer(t *testing.T) *httptest.Server {
	t.Helper()
	logs := &bytesLog{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	reg := connect.NewRegistry()
	reg.MustRegister(webhook.Connector())
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(w, l, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
		if strings.Contains(logs.String(), "SECRETKEY123") {
			t.Errorf("the log shows a credential:\n%s", logs.String())
		}
	})
	return srv
}

// The validate endpoint masks the url's hapikey in "value", and in the
// same entry's "errors" too; so does POST /connectors's 400 message: a
// connector's problems go through its Redact, as GET's values do.
func TestValidate_ErrorsMaskCredentials(t *testing.T) {
	srv := newWebhookServer(t)
	const cfg = `{"connector.class":"webhook","topics":"in","url":"ftp://api.example.com/contacts?hapikey=SECRETKEY123"}`
	code, body := call(t, srv, "PUT", "/connector-plugins/webhook/config/validate", cfg)
	if code != 200 {
		t.Fatalf("validate: %d %s", code, body)
	}
	if !strings.Contains(body, "hapikey="+connect.Masked) {
		t.Fatalf("validate does not mask the value at all: %s", body)
	}
	if strings.Contains(body, "SECRETKEY123") {
		i := strings.Index(body, "SECRETKEY123")
		t.Errorf("validate answer shows the credential it masks in the value: …%s…", body[max(0, i-200):min(len(body), i+60)])
	}
	if want := `ftp://api.example.com/contacts?hapikey=` + connect.Masked + `\" is not an http or https URL`; !strings.Contains(body, want) {
		t.Errorf("validate's error does not show the URL as masked: want %s in %s", want, body)
	}
	code, body = call(t, srv, "POST", "/connectors", `{"name":"crm","initial_state":"STOPPED","config":`+cfg+`}`)
	if code != 400 {
		t.Fatalf("create: %d %s", code, body)
	}
	if strings.Contains(body, "SECRETKEY123") || !strings.Contains(body, "hapikey="+connect.Masked) {
		t.Errorf("create's 400 does not mask the credential: %s", body)
	}
}
