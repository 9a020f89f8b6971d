package crmwebhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/connectors/webhook"
	"github.com/tributary-io/tributary/internal/exampletest"
	"github.com/tributary-io/tributary/internal/pgtest"
)

// fakeCRM stands in for HubSpot's and Salesforce's APIs: it applies the
// upserts and deletes the examples send to a map of contacts, by the id
// each API upserts by (HubSpot the email, Salesforce Customer_Id__c).
type fakeCRM struct {
	t    *testing.T
	auth string

	mu       sync.Mutex
	contacts map[string]string // id → "first last email"
}

func (c *fakeCRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if got := r.Header.Get("Authorization"); got != c.auth {
		c.t.Errorf("%s %s: Authorization %q, want %q", r.Method, r.URL.Path, got, c.auth)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	bad := func(err error) {
		c.t.Errorf("%s %s: %v: %s", r.Method, r.URL.Path, err, body)
		w.WriteHeader(http.StatusBadRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	const sobject = "/services/data/v62.0/sobjects/Contact/Customer_Id__c/"
	switch r.Method + " " + r.URL.Path {
	case "POST /crm/v3/objects/contacts/batch/upsert":
		var b struct {
			Inputs []struct {
				IDProperty string            `json:"idProperty"`
				ID         string            `json:"id"`
				Properties map[string]string `json:"properties"`
			} `json:"inputs"`
		}
		if err := json.Unmarshal(body, &b); err != nil || len(b.Inputs) == 0 || len(b.Inputs) > 100 {
			bad(fmt.Errorf("%d inputs, %v", len(b.Inputs), err))
			return
		}
		for _, in := range b.Inputs {
			if in.IDProperty != "email" {
				bad(fmt.Errorf("idProperty %q", in.IDProperty))
				return
			}
			p := in.Properties
			c.contacts[in.ID] = p["firstname"] + " " + p["lastname"] + " " + p["email"]
		}
		io.WriteString(w, `{"status":"COMPLETE","results":[]}`)
	case "POST /services/data/v62.0/composite":
		var b struct {
			AllOrNone bool `json:"allOrNone"`
			Requests  []struct {
				Method      string            `json:"method"`
				URL         string            `json:"url"`
				ReferenceID string            `json:"referenceId"`
				Body        map[string]string `json:"body"`
			} `json:"compositeRequest"`
		}
		if err := json.Unmarshal(body, &b); err != nil || len(b.Requests) == 0 || len(b.Requests) > 25 {
			bad(fmt.Errorf("%d subrequests, %v", len(b.Requests), err))
			return
		}
		var answers []string
		for _, s := range b.Requests {
			id, ok := strings.CutPrefix(s.URL, sobject)
			switch {
			case !ok:
				bad(fmt.Errorf("subrequest url %q", s.URL))
				return
			case s.Method == "PATCH":
				c.contacts[id] = s.Body["FirstName"] + " " + s.Body["LastName"] + " " + s.Body["Email"]
			case s.Method == "DELETE":
				delete(c.contacts, id)
			default:
				bad(fmt.Errorf("subrequest method %q", s.Method))
				return
			}
			answers = append(answers, fmt.Sprintf(`{"httpStatusCode":204,"referenceId":%q}`, s.ReferenceID))
		}
		fmt.Fprintf(w, `{"compositeResponse":[%s]}`, strings.Join(answers, ","))
	case "PATCH /services/data/v62.0/composite/sobjects/Contact/Customer_Id__c":
		var b struct {
			Records []map[string]any `json:"records"`
		}
		if err := json.Unmarshal(body, &b); err != nil || len(b.Records) == 0 || len(b.Records) > 200 {
			bad(fmt.Errorf("%d records, %v", len(b.Records), err))
			return
		}
		for _, rec := range b.Records {
			id, _ := rec["Customer_Id__c"].(string)
			c.contacts[id] = fmt.Sprint(rec["FirstName"], " ", rec["LastName"], " ", rec["Email"])
		}
		io.WriteString(w, `[]`)
	default:
		c.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

func (c *fakeCRM) state() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for _, id := range slices.Sorted(maps.Keys(c.contacts)) {
		lines = append(lines, id+": "+c.contacts[id])
	}
	return strings.Join(lines, "\n")
}

// TestExamples_EndToEnd runs each example pipeline file as it is, on a
// throwaway Postgres with logical replication and a fake CRM: the rows of
// the snapshot and the changes streamed after it must end up in the CRM.
func TestExamples_EndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	pg := pgtest.Start(t, pgtest.Logical...)
	tests := []struct {
		file, auth         string
		snapshot, streamed string // the CRM's contacts after each phase
	}{
		// HubSpot upserts by the lower-cased email and does not sync deletes.
		{"hubspot.yaml", "Bearer pat-test-hubspot-token",
			"ada@example.org: Ada Lovelace ada@example.org\ngrace@example.org: Grace Hopper grace@example.org",
			"ada@example.org: Ada King ada@example.org\ngrace@example.org: Grace Hopper grace@example.org\nkj@example.org: Katherine Johnson kj@example.org"},
		// Composite upserts and deletes by Customer_Id__c.
		{"salesforce-composite.yaml", "Bearer 00Dtest!salesforce-token",
			"1: Ada Lovelace Ada@Example.org\n2: Grace Hopper grace@example.org",
			"1: Ada King ada@example.org\n3: Katherine Johnson kj@example.org"},
		// Collections upserts and does not sync deletes.
		{"salesforce-collections.yaml", "Bearer 00Dtest!salesforce-token",
			"1: Ada Lovelace Ada@Example.org\n2: Grace Hopper grace@example.org",
			"1: Ada King ada@example.org\n2: Grace Hopper grace@example.org\n3: Katherine Johnson kj@example.org"},
	}
	for i, tc := range tests {
		t.Run(strings.TrimSuffix(tc.file, ".yaml"), func(t *testing.T) {
			db := fmt.Sprintf("shop%d", i)
			pg.CreateDB(t, db)
			conn, err := pgx.Connect(t.Context(), pg.DSN(db))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			exec := func(sql string) {
				t.Helper()
				if _, err := conn.Exec(t.Context(), sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			exec(`CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, first_name text, last_name text, phone text)`)
			exec(`INSERT INTO customers VALUES (1, 'Ada@Example.org', 'Ada', 'Lovelace', NULL), (2, 'grace@example.org', 'Grace', 'Hopper', '+1 555 0100')`)

			crm := &fakeCRM{t: t, auth: tc.auth, contacts: map[string]string{}}
			srv := httptest.NewServer(crm)
			defer srv.Close()
			stop := runExample(t, tc.file, map[string]string{
				"PG_DSN":             pg.DSN(db),
				"HUBSPOT_TOKEN":      "pat-test-hubspot-token",
				"HUBSPOT_API":        srv.URL,
				"SF_INSTANCE_URL":    srv.URL,
				"SF_ACCESS_TOKEN":    "00Dtest!salesforce-token",
				"TRIBUTARY_DATA_DIR": t.TempDir(),
			})
			defer stop()

			waitFor(t, crm, "the snapshot", tc.snapshot)
			exec(`UPDATE customers SET email = 'ada@example.org', last_name = 'King' WHERE id = 1`)
			exec(`INSERT INTO customers VALUES (3, 'kj@example.org', 'Katherine', 'Johnson', NULL)`)
			exec(`DELETE FROM customers WHERE id = 2`)
			waitFor(t, crm, "the streamed changes", tc.streamed)
			stop()
			// The slot is the cluster's: the next example creates its own
			// of the same name (tributary_shop_db).
			dropSlot(t, conn, "tributary_shop_db")
		})
	}
}

// runExample loads file with env and runs it in a worker of its own; the
// returned function stops the worker, draining it, and may be called twice.
func runExample(t *testing.T, file string, env map[string]string) (stop func()) {
	t.Helper()
	p := exampletest.Load(t, file, env, postgres.Connector(), webhook.Connector())
	if want := env["TRIBUTARY_DATA_DIR"]; p.Log.Dir != want {
		t.Fatalf("log dir %s, want %s", p.Log.Dir, want)
	}
	return exampletest.Run(t, p, postgres.Connector(), webhook.Connector()).Shutdown
}

// waitFor waits until the CRM holds want, failing the test with what it
// holds when it does not within 15 s.
func waitFor(t *testing.T, crm *fakeCRM, what, want string) {
	t.Helper()
	exampletest.WaitFor(t, 15*time.Second, what+" reaches the CRM", func() error {
		if got := crm.state(); got != want {
			return fmt.Errorf("the CRM holds\n%s\nwant\n%s", got, want)
		}
		return nil
	})
}

// dropSlot drops a replication slot once the stopped worker's connection
// has let go of it.
func dropSlot(t *testing.T, conn *pgx.Conn, slot string) {
	t.Helper()
	exampletest.WaitFor(t, 10*time.Second, "drop slot "+slot, func() error {
		_, err := conn.Exec(t.Context(), `SELECT pg_drop_replication_slot($1)`, slot)
		return err
	})
}
