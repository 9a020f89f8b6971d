package pipelines

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// testCatalog holds a few connectors and transforms shaped like the built-in
// ones.
var testCatalog = Specs{
	KindSource: {
		"generator": {Params: []connect.Param{
			{Name: "rate", Type: connect.TypeInt, Default: "100", Description: "events per second"},
			{Name: "seed", Type: connect.TypeInt, Description: "random seed"},
			{Name: "event_size", Type: connect.TypeSize, Description: "padding per event"},
		}},
		"postgres": {Params: []connect.Param{
			{Name: "url", Type: connect.TypeString, Required: true, Description: "postgres:// connection URL"},
			{Name: "password", Type: connect.TypePassword, Description: "the replication user's password"},
			{Name: "port", Type: connect.TypeInt, Secret: true, Description: "a secret number"},
			{Name: "tables", Type: connect.TypeList, Description: "schema.table names to capture"},
			{Name: "snapshot", Type: connect.TypeString, Enum: []string{"initial", "never"}, Default: "initial", Description: "whether to snapshot first"},
		}},
	},
	KindSink: {
		"file": {Params: []connect.Param{
			{Name: "path", Type: connect.TypeString, Required: true, Exclusive: true, Description: "the file to append to"},
			{Name: "fsync", Type: connect.TypeBool, Default: "true", Description: "fsync before Write returns"},
		}},
		"stdout": {Params: []connect.Param{
			{Name: "format", Type: connect.TypeString, Enum: []string{"json", "text"}, Default: "json", Description: "output format"},
		}},
		"webhook": {Params: []connect.Param{
			{Name: "url", Type: connect.TypeString, Required: true, Description: "where to POST"},
			{Name: "token", Type: connect.TypeString, Secret: true, Description: "bearer token"},
			{Name: "timeout", Type: connect.TypeDuration, Default: "10s", Description: "request timeout"},
		}},
	},
	KindTransform: {
		"filter": {Params: []connect.Param{{Name: "condition", Type: connect.TypeString, Required: true, Description: "keep records that match"}}},
		"mask":   {Params: []connect.Param{{Name: "fields", Type: connect.TypeList, Required: true, Description: "fields to mask"}}},
		"route":  {Params: []connect.Param{{Name: "topic", Type: connect.TypeString, Required: true, Description: "topic template"}}},
		"unwrap": {Params: nil},
	},
}

// testEnv is the environment the tests see.
func testEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var testOpts = Options{Catalog: testCatalog, LookupEnv: testEnv(map[string]string{
	"PGPASSWORD": "s3cret-pw",
	"CRM_TENANT": "acme",
	"CRM_TOKEN":  "tok-123",
	"EMPTY":      "",
	"PARTS":      "4",
})}

// errorList asserts that err is an ErrorList and returns it.
func errorList(t *testing.T, err error) ErrorList {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got error %T %v, want an ErrorList", err, err)
	}
	return list
}

// annotate shows each error's line of src with a caret under its column, to
// make a failing position easy to see.
func annotate(src string, errs ErrorList) string {
	src = strings.TrimPrefix(src, "\n")
	lines := strings.Split(src, "\n")
	var b strings.Builder
	for _, e := range errs {
		if e.Line < 1 || e.Line > len(lines) {
			fmt.Fprintf(&b, "%d:%d (no such line)\n", e.Line, e.Column)
			continue
		}
		fmt.Fprintf(&b, "%s\n%s^ %d:%d\n", lines[e.Line-1], strings.Repeat(" ", max(0, e.Column-1)), e.Line, e.Column)
	}
	return b.String()
}
