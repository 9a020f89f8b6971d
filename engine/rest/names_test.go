package rest

import (
	"strings"
	"testing"
)

// TestREST_CreateRefusesUnaddressableNames: a connector named ".", ".."
// or with a "/" was created, but no URL reaches it afterwards (the path
// is cleaned or split), so it could not be read, stopped or deleted over
// REST. Found by FuzzREST_Bodies.
func TestREST_CreateRefusesUnaddressableNames(t *testing.T) {
	srv, _, _ := newTestServer(t)
	for _, name := range []string{".", "..", "a/b", "/"} {
		code, body := call(t, srv, "POST", "/connectors", `{"name":"`+name+`","config":{"connector.class":"idle","topic":"t"}}`)
		if code != 400 || !strings.Contains(body, `\"`+name+`\"`) && !strings.Contains(body, `"`+name+`"`) {
			t.Errorf("POST /connectors named %q = %d %s; want 400 naming it", name, code, body)
		}
	}
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"a.b-c_d","config":{"connector.class":"idle","topic":"t"}}`); code != 201 {
		t.Errorf("POST /connectors named a.b-c_d = %d %s", code, body)
	}
}
