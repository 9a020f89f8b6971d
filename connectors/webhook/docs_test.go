package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/docstest"
)

// TestDocs checks that the configuration table in the connector's page
// under docs/connectors is Spec.Markdown(); -update rewrites it.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "connectors", Name+".md")
	docstest.CheckSpecTable(t, path, "./connectors/"+Name, Connector().Spec, *update)
}

// TestDocs_FirstExample runs the config of the page's first example on a
// Debezium create and delete: both reach the receiver (PUT and DELETE), so
// that the example does not dead-letter every delete.
func TestDocs_FirstExample(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "connectors", Name+".md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(page), "```yaml\n")
	block, _, _ := strings.Cut(rest, "```")
	var doc struct {
		Sinks []struct {
			Config map[string]string `yaml:"config"`
		} `yaml:"sinks"`
	}
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil || len(doc.Sinks) != 1 {
		t.Fatalf("the first yaml block of the page: %v", err)
	}
	rc := newReceiver(t, nil)
	values := doc.Sinks[0].Config
	values["url"] = strings.Replace(values["url"], "https://hooks.example.com", rc.srv.URL, 1)
	values["headers"] = strings.ReplaceAll(values["headers"], "${CRM_TOKEN}", "token-123456")
	values["signing.secret"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	s := open(t, fast(values))
	recs := []connect.Record{
		{Topic: "cdc.public.customers", Offset: 0, Key: []byte(`{"id":7}`), Value: []byte(`{"before":null,"after":{"id":7,"email":"a@x.org","name":null},"op":"c"}`)},
		{Topic: "cdc.public.customers", Offset: 1, Key: []byte(`{"id":7}`), Value: []byte(`{"before":{"id":7},"after":null,"op":"d"}`)},
		{Topic: "cdc.public.customers", Offset: 2, Key: []byte(`{"id":7}`)}, // the tombstone
	}
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got := rc.requests()
	if len(got) != 2 || got[0].method != "PUT" || got[0].path != "/customers/7" || string(got[0].body) != `{"email": "a@x.org", "name": ""}` ||
		got[1].method != "DELETE" || got[1].path != "/customers/7" {
		t.Errorf("requests: %+v", got)
	}
}
