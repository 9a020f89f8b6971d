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
	{"POST", "/topics/t/records", `{"records":[{"partition":0,"value":"a","key":"k","headers":[["h","v"],[null,null]]},{"partition":1,"value":null}]}`},
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
const cConfig = `{"connector.class":"idle","topic":"t"}`

// fuzzServer starts the test server with the connectors and topic the
// fuzz targets use, and returns a function that sends it one request
// through its handler.
func fuzzServer(f *testing.F) func(t testing.TB, method, path, body string) (int, string) {
	srv, _, _, _ := newTestServerLog(f)
	h := srv.Config.Handler
	do := func(t testing.TB, method, path, body string) (int, string) {
		req := httptest.NewRequestWithContext(t.Context(), method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/topics", `{"name":"t","partitions":2}`},
		{"POST", "/topics/t/records", `{"records":[{"partition":0,"key":"k","value":"a","headers":[["h",null],["e",""]]},{"partition":1,"value":null}]}`},
		{"POST", "/connectors", `{"name":"c","config":` + cConfig + `}`},
		{"PUT", "/connectors/c/stop", ""},
		{"POST", "/connectors", `{"name":"s","initial_state":"STOPPED","config":{"connector.class":"null","topics":"t"}}`},
	} {
		if code, body := do(f, s.method, s.path, s.body); code >= 300 {
			f.Fatalf("%s %s = %d %s", s.method, s.path, code, body)
		}
	}
	return do
}

// checkAnswer fails unless an answer is below 500 and, when an error, Kafka
// Connect's JSON error body.
func checkAnswer(t *testing.T, method, path string, body []byte, code int, answer string) {
	t.Helper()
	if code >= 500 {
		t.Fatalf("%s %s %q = %d %s", method, path, body, code, answer)
	}
	if code >= 400 {
		var e apiError
		if err := json.Unmarshal([]byte(answer), &e); err != nil || e.ErrorCode != code || e.Message == "" {
			t.Fatalf("%s %s %q = %d with a body that is not an error: %s", method, path, body, code, answer)
		}
	}
}

func FuzzREST_Bodies(f *testing.F) {
	do := fuzzServer(f)
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
		checkAnswer(t, r.method, r.path, body, code, answer)
		if code >= 400 {
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

// fuzzGets are the GET requests whose path or query carries input.
var fuzzGets = []string{
	"/topics/t/partitions/%s/records?",
	"/topics/t/partitions/0/records?",
	"/topics/t/partitions/%s/offsets?",
	"/connectors?",
	"/connectors/c/status?",
	"/groups/%s?",
	"/topics/%s?",
}

// FuzzREST_Queries sends GET requests with arbitrary path values and
// query strings (offsets, max_bytes, encoding, expand, timestamp). None
// panics or answers 5xx, and every error is Kafka Connect's JSON error
// body. A max_wait_ms is dropped, so that no run waits for records.
func FuzzREST_Queries(f *testing.F) {
	do := fuzzServer(f)
	for i := range fuzzGets {
		for _, q := range []string{"", "offset=0&max_bytes=10&encoding=base64", "offset=-1", "offset=99999999999999999999", "encoding=nope",
			"max_bytes=-5", "expand=status&expand=info", "timestamp=1700000000000", "timestamp=x", "offset=1&offset=2"} {
			f.Add(uint8(i), "0", q)
		}
		f.Add(uint8(i), "-1", "")
		f.Add(uint8(i), "2147483648", "")
		f.Add(uint8(i), "%zz", "")
	}
	f.Fuzz(func(t *testing.T, route uint8, value, query string) {
		tmpl := fuzzGets[int(route)%len(fuzzGets)]
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		q.Del("max_wait_ms")
		path := tmpl + q.Encode()
		if strings.Contains(tmpl, "%s") {
			path = strings.Replace(tmpl, "%s", url.PathEscape(value), 1) + q.Encode()
		}
		if _, err := url.ParseRequestURI(path); err != nil {
			return
		}
		code, answer := do(t, "GET", path, "")
		checkAnswer(t, "GET", path, nil, code, answer)
	})
}
