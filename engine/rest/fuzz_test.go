package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzRoutes are the requests that take a body; FuzzREST_Bodies sends
// arbitrary bodies to them. Connector c is a stopped idle source, topic t
// has two partitions, s is a stopped sink of t.
var fuzzRoutes = []struct{ method, path, seed string }{
	{"POST", "/connectors", `{"name":"n","config":{"connector.class":"idle","topic":"t","password":"pw"}}`},
	{"PUT", "/connectors/c/config", `{"connector.class":"idle","topic":"t","mode":"b"}`},
	{"PATCH", "/connectors/c/config", `{"mode":"b","url":null}`},
	{"PATCH", "/connectors/c/offsets", `{"offsets":[{"partition":{"pipeline":"rest"},"offset":{"seq":5}}]}`},
	{"PATCH", "/connectors/s/offsets", `{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1},"offset":{"kafka_offset":0}},{"partition":{"kafka_topic":"t","kafka_partition":0},"offset":null}]}`},
	{"POST", "/connectors/c/signals", `{"type":"execute-snapshot","data":{"data-collections":["public.orders"],"type":"incremental"}}`},
	{"PUT", "/connector-plugins/idle/config/validate", `{"connector.class":"idle","password":"x","mode":"z","bogus":"1","url":"http://u:p@h/"}`},
	{"POST", "/topics", `{"name":"n","partitions":2,"config":{"cleanup.policy":"compact"}}`},
	{"POST", "/topics/t/records", `{"records":[{"partition":0,"value":"a","key":"k","headers":[{"key":"h","value":"v"}]},{"partition":1,"value":null}]}`},
	{"POST", "/topics/t/records?encoding=base64", `{"records":[{"value":"YQ==","key":"!"}]}`},
	{"PATCH", "/topics/t", `{"set":{"retention.ms":"1000"},"remove":["segment.bytes"]}`},
	{"POST", "/groups/g/offsets", `{"offsets":[{"topic":"t","partition":0,"current_offset":0}]}`},
	{"POST", "/groups/g/reset", `{"spec":{"Mode":1,"Topics":[{"Topic":"t"}]},"execute":true}`},
}

// FuzzREST_Bodies sends arbitrary bodies to every REST endpoint that
// takes one, through the server's handler. No request panics or answers
// 5xx; every error answer is Kafka Connect's JSON error body; and what the
// fuzzer creates (a connector, a topic) is deleted again, so that runs do
// not pile up.
func FuzzREST_Bodies(f *testing.F) {
	srv, _, _, _ := newTestServerLog(f)
	h := srv.Config.Handler
	do := func(t testing.TB, method, path, body string) (int, string) {
		req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	const cConfig = `{"connector.class":"idle","topic":"t"}`
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/topics", `{"name":"t","partitions":2}`},
		{"POST", "/connectors", `{"name":"c","config":` + cConfig + `}`},
		{"PUT", "/connectors/c/stop", ""},
		{"POST", "/connectors", `{"name":"s","initial_state":"STOPPED","config":{"connector.class":"null","topics":"t"}}`},
	} {
		if code, body := do(f, s.method, s.path, s.body); code >= 300 {
			f.Fatalf("%s %s = %d %s", s.method, s.path, code, body)
		}
	}
	for i, r := range fuzzRoutes {
		f.Add(uint8(i), []byte(r.seed))
		f.Add(uint8(i), []byte(`{}`))
		f.Add(uint8(i), []byte(`null`))
		f.Add(uint8(i), []byte(`[`))
	}
	for _, s := range []string{`{"offsets":[{"partition":null,"offset":null}]}`, `{"offsets":[{"partition":{"pipeline":1},"offset":"x"}]}`,
		`{"offsets":[{"partition":{},"offset":{"seq":-1}}]}`, `{"offsets":[]}`} {
		f.Add(uint8(3), []byte(s))
	}
	for _, s := range []string{`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":1e19},"offset":{"kafka_offset":-9223372036854775808}}]}`,
		`{"offsets":[{"partition":{"kafka_topic":"t","kafka_partition":0.5},"offset":{"kafka_offset":1}}]}`,
		`{"offsets":[{"partition":{"kafka_topic":"nope","kafka_partition":0},"offset":{"kafka_offset":"1"}}]}`} {
		f.Add(uint8(4), []byte(s))
	}
	f.Add(uint8(7), []byte(`{"name":"","partitions":-1}`))
	f.Add(uint8(7), []byte(`{"name":"../x","partitions":1}`))
	f.Add(uint8(8), []byte(`{"records":[{"partition":99,"value":"a"},{"partition":-1}]}`))
	f.Add(uint8(12), []byte(`{"spec":{"Mode":99,"Topics":[{"Topic":"t","Partitions":[-1]}]},"execute":true}`))

	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		code, answer := do(t, r.method, r.path, string(body))
		if code >= 500 {
			t.Fatalf("%s %s %q = %d %s", r.method, r.path, body, code, answer)
		}
		if code >= 400 {
			var e apiError
			if err := json.Unmarshal([]byte(answer), &e); err != nil || e.ErrorCode != code || e.Message == "" {
				t.Fatalf("%s %s %q = %d with a body that is not an error: %s", r.method, r.path, body, code, answer)
			}
			return
		}
		// Undo what succeeded, so that the next run starts the same.
		var created struct {
			Name string `json:"name"`
		}
		switch {
		case r.method == "POST" && r.path == "/connectors":
			if json.Unmarshal([]byte(answer), &created) == nil && created.Name != "" && created.Name != "c" {
				if code, body := do(t, "DELETE", "/connectors/"+url.PathEscape(created.Name), ""); code >= 300 && code != http.StatusNotFound {
					t.Fatalf("delete connector %q = %d %s", created.Name, code, body)
				}
			}
		case r.method == "POST" && r.path == "/topics":
			if json.Unmarshal([]byte(answer), &created) == nil && created.Name != "" && created.Name != "t" {
				if code, body := do(t, "DELETE", "/topics/"+url.PathEscape(created.Name), ""); code >= 300 && code != http.StatusNotFound {
					t.Fatalf("delete topic %q = %d %s", created.Name, code, body)
				}
			}
		case strings.HasPrefix(r.path, "/connectors/c/config"):
			if code, body := do(t, "PUT", "/connectors/c/config", cConfig); code >= 300 {
				t.Fatalf("restore c = %d %s", code, body)
			}
			do(t, "PUT", "/connectors/c/stop", "")
		}
	})
}
