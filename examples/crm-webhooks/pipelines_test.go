// Package crmwebhooks_test checks the CRM webhook example pipelines: each
// file validates against the real connector and transform specs, and its
// transforms and templates, run on Debezium change events, send the
// requests the CRM's API expects to a local server standing in for it.
package crmwebhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/connectors/webhook"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/internal/exampletest"
	"github.com/tributary-io/tributary/pipelines"
)

// load parses an example with the environment variables it needs set,
// the CRM's base URL pointing at api.
func load(t *testing.T, file, api string) *pipelines.Pipeline {
	t.Helper()
	env := map[string]string{
		"PG_DSN":          "postgres://tributary:secret@localhost:5432/shop",
		"HUBSPOT_TOKEN":   "pat-test-hubspot-token",
		"HUBSPOT_API":     api,
		"SF_INSTANCE_URL": api,
		"SF_ACCESS_TOKEN": "00Dtest!salesforce-token",
	}
	return exampletest.Load(t, file, env, postgres.Connector(), webhook.Connector())
}

// customerEvents are Debezium change events of public.customers: two
// creates, an update, and a delete with its tombstone.
func customerEvents() []connect.Record {
	row := func(id int, email, first, last string) string {
		return fmt.Sprintf(`{"id":%d,"email":%q,"first_name":%q,"last_name":%q,"phone":null}`, id, email, first, last)
	}
	event := func(op, before, after string) []byte {
		return fmt.Appendf(nil, `{"before":%s,"after":%s,"source":{"version":"0.1.0","connector":"postgresql","name":"shop-db","db":"shop","schema":"public","table":"customers"},"op":%q,"ts_ms":1767323045000}`, before, after, op)
	}
	ada, grace := row(1, "Ada@Example.org", "Ada", "Lovelace"), row(2, "grace@example.org", "Grace", "Hopper")
	ada2 := row(1, "ada@example.org", "Ada", "King")
	vals := [][2]string{
		{`{"id":1}`, string(event("c", "null", ada))},
		{`{"id":2}`, string(event("c", "null", grace))},
		{`{"id":1}`, string(event("u", ada, ada2))},
		{`{"id":2}`, string(event("d", grace, "null"))},
		{`{"id":2}`, ""}, // the tombstone
	}
	out := make([]connect.Record, len(vals))
	for i, v := range vals {
		out[i] = connect.Record{Topic: "cdc.public.customers", Offset: int64(i), Key: []byte(v[0])}
		if v[1] != "" {
			out[i].Value = []byte(v[1])
		}
	}
	return out
}

type request struct {
	method, path, auth string
	body               []byte
}

// deliver runs the events through the sink's transforms and a webhook sink
// opened with its config, and returns the requests the server got.
func deliver(t *testing.T, file string) []request {
	t.Helper()
	var mu sync.Mutex
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
		mu.Unlock()
	}))
	defer srv.Close()
	p := load(t, file, srv.URL)
	if len(p.Sinks) != 1 {
		t.Fatalf("%s: %d sinks, want 1", file, len(p.Sinks))
	}
	sk := p.Sinks[0]
	reg := transform.Builtin()
	var recs []connect.Record
	for _, rec := range customerEvents() {
		batch := []connect.Record{rec}
		for _, ts := range sk.Transforms {
			tr, err := reg.New(ts.Type, ts.Config)
			if err != nil {
				t.Fatalf("%s: transform %s: %v", file, ts.Type, err)
			}
			var next []connect.Record
			for _, r := range batch {
				out, err := tr.Apply(r)
				if err != nil {
					t.Fatalf("%s: transform %s: %v", file, ts.Type, err)
				}
				next = append(next, out...)
			}
			batch = next
		}
		recs = append(recs, batch...)
	}
	conn := webhook.Connector()
	sink := conn.NewSink()
	cfg := connect.Config{Pipeline: p.Name, Connector: sk.Name, Values: conn.Spec.WithDefaults(sk.Config), Spec: conn.Spec}
	if err := sink.Open(t.Context(), cfg); err != nil {
		t.Fatalf("%s: open: %v", file, err)
	}
	defer sink.Close(context.Background())
	if err := sink.Write(t.Context(), recs); err != nil {
		t.Fatalf("%s: write: %v", file, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

func TestExamples_Validate(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("example files %v, %v", files, err)
	}
	limits := map[string]int{"hubspot.yaml": 100, "salesforce-composite.yaml": 25, "salesforce-collections.yaml": 200}
	for _, f := range files {
		p := load(t, f, "https://crm.example.test")
		n, _ := strconv.Atoi(p.Sinks[0].Config["batch.size"])
		if want, ok := limits[f]; !ok || n != want {
			t.Errorf("%s: batch.size %d, want the API's limit %d", f, n, want)
		}
		masked := fmt.Sprint(p.Masked().Sinks[0].Config)
		if strings.Contains(masked, "token") {
			t.Errorf("%s: the masked config shows a token: %s", f, masked)
		}
	}
}

func TestHubSpot_BatchUpsert(t *testing.T) {
	got := deliver(t, "hubspot.yaml")
	// The update of Ada waits for her create: two requests, in order.
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2 (Ada's update must not share a batch with her create)", len(got))
	}
	var emails [][]string
	for _, r := range got {
		if r.method != "POST" || r.path != "/crm/v3/objects/contacts/batch/upsert" || r.auth != "Bearer pat-test-hubspot-token" {
			t.Errorf("request %s %s auth %q", r.method, r.path, r.auth)
		}
		var b struct {
			Inputs []struct {
				IDProperty string            `json:"idProperty"`
				ID         string            `json:"id"`
				Properties map[string]string `json:"properties"`
			} `json:"inputs"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		var batch []string
		for _, in := range b.Inputs {
			if in.IDProperty != "email" || in.ID != in.Properties["email"] || in.Properties["phone"] != "" {
				t.Errorf("input %+v", in)
			}
			batch = append(batch, in.ID+" "+in.Properties["lastname"])
		}
		emails = append(emails, batch)
	}
	if want := "[[ada@example.org Lovelace grace@example.org Hopper] [ada@example.org King]]"; fmt.Sprint(emails) != want {
		t.Errorf("batches %v, want %s", emails, want)
	}
}

func TestSalesforce_Composite(t *testing.T) {
	got := deliver(t, "salesforce-composite.yaml")
	var subs []string
	for _, r := range got {
		if r.method != "POST" || r.path != "/services/data/v62.0/composite" || r.auth != "Bearer 00Dtest!salesforce-token" {
			t.Errorf("request %s %s auth %q", r.method, r.path, r.auth)
		}
		var b struct {
			AllOrNone bool `json:"allOrNone"`
			Requests  []struct {
				Method, URL, ReferenceID string
				Body                     map[string]any
			} `json:"compositeRequest"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		for _, s := range b.Requests {
			subs = append(subs, s.Method+" "+s.URL+" "+s.ReferenceID+" "+fmt.Sprint(s.Body["LastName"]))
		}
	}
	want := []string{
		"PATCH /services/data/v62.0/sobjects/Contact/Customer_Id__c/1 r0_0 Lovelace",
		"PATCH /services/data/v62.0/sobjects/Contact/Customer_Id__c/2 r0_1 Hopper",
		"PATCH /services/data/v62.0/sobjects/Contact/Customer_Id__c/1 r0_2 King",
		"DELETE /services/data/v62.0/sobjects/Contact/Customer_Id__c/2 r0_3 <nil>",
	}
	if fmt.Sprint(subs) != fmt.Sprint(want) {
		t.Errorf("subrequests\n got %q\nwant %q", subs, want)
	}
}

func TestSalesforce_Collections(t *testing.T) {
	got := deliver(t, "salesforce-collections.yaml")
	var recs []string
	for _, r := range got {
		if r.method != "PATCH" || r.path != "/services/data/v62.0/composite/sobjects/Contact/Customer_Id__c" {
			t.Errorf("request %s %s", r.method, r.path)
		}
		var b struct {
			Records []map[string]any `json:"records"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		for _, rec := range b.Records {
			recs = append(recs, fmt.Sprint(rec["attributes"], " ", rec["Customer_Id__c"], " ", rec["Email"]))
		}
	}
	want := "[map[type:Contact] 1 Ada@Example.org map[type:Contact] 2 grace@example.org map[type:Contact] 1 ada@example.org]"
	if fmt.Sprint(recs) != want {
		t.Errorf("records %v, want %s", recs, want)
	}
}
