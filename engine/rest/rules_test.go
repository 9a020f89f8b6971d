package rest

import (
	"encoding/json"
	"strings"
	"testing"
)

// POST and PUT /connectors check what a pipeline file's sources and sinks
// are checked for, and answer 400 with Kafka Connect's error body naming
// the key, instead of creating a connector that fails or misbehaves.
func TestCreateConnector_PipelineRules(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"s1","config":{"connector.class":"null","topics":"in","group":"g"}}`); code != 201 {
		t.Fatalf("create s1: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"s3","config":{"connector.class":"null","topics":"in"}}`); code != 201 {
		t.Fatalf("create s3: %d %s", code, body)
	}
	for _, tt := range []struct{ name, body, key string }{
		{"source without topic", `{"name":"src","config":{"connector.class":"idle"}}`, "topic: "},
		{"bad topic name", `{"name":"src","config":{"connector.class":"idle","topic":"bad topic!"}}`, `topic: invalid topic name "bad topic!"`},
		{"topics and topics.regex", `{"name":"s2","config":{"connector.class":"null","topics":"in","topics.regex":"i.*"}}`, "topics.regex: "},
		{"dead-letter topic read", `{"name":"s2","config":{"connector.class":"null","topics":"in,dlq","errors.tolerance":"all","errors.deadletterqueue.topic.name":"dlq"}}`, `errors.deadletterqueue.topic.name: dead-letter topic "dlq" is also a topic the sink reads`},
		{"group of another sink", `{"name":"s2","config":{"connector.class":"null","topics":"in","group":"g"}}`, `group: consumer group "g" is already used by sink s1`},
		{"default group of another sink", `{"name":"s2","config":{"connector.class":"null","topics":"in","group":"s3"}}`, `group: consumer group "s3" is already used by sink s3`},
		{"reserved group", `{"name":"s2","config":{"connector.class":"null","topics":"in","group":"_tributary-source.p.c"}}`, `group: consumer group "_tributary-source.p.c" is reserved`},
		{"reserved default group", `{"name":"_tributary.s","config":{"connector.class":"null","topics":"in"}}`, `group: consumer group "_tributary.s" is reserved`},
		{"name with a path", `{"name":"../x","config":{"connector.class":"null","topics":"in"}}`, `name: invalid sink name "../x"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, srv, "POST", "/connectors", tt.body)
			var e apiError
			_ = json.Unmarshal([]byte(body), &e)
			if code != 400 || e.ErrorCode != 400 || !strings.Contains(e.Message, tt.key) {
				t.Errorf("got %d %s, want 400 naming %q", code, body, tt.key)
			}
		})
	}
	// PUT checks the same, and leaves the connector as it was.
	code, body := call(t, srv, "PUT", "/connectors/s1/config", `{"connector.class":"null","topics":"in","errors.tolerance":"all","errors.deadletterqueue.topic.name":"in"}`)
	if code != 400 || !strings.Contains(body, "errors.deadletterqueue.topic.name: ") {
		t.Errorf("PUT a dead-letter topic the sink reads: got %d %s, want 400", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors/s1/config", ""); code != 200 || !strings.Contains(body, `"group":"g"`) {
		t.Errorf("s1 after a refused PUT: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors", ""); body != "[\"s1\",\"s3\"]\n" {
		t.Errorf("connectors after refused creates: %d %s", code, body)
	}
}
