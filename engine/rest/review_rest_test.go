package rest

import (
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// Kafka Connect refuses a PUT …/config whose "name" differs from the URL's:
// 400 "Connector name configuration (b) doesn't match connector name in
// the URL (a)". Accepting it silently leaves the caller believing they
// configured connector b.
func TestReviewRest_PutConfigNameMismatch(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "PUT", "/connectors/a/config", `{"connector.class":"idle","name":"b","topic":"t"}`)
	if code != 400 {
		t.Errorf("PUT /connectors/a/config with name=b: %d %s; want 400 (Kafka Connect: name doesn't match the URL)", code, body)
	}
}

// POST /connectors with a body name and a different config "name": Kafka
// Connect answers 400 (checkAndPutConnectorConfigName).
func TestReviewRest_CreateNameMismatch(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","config":{"connector.class":"idle","name":"b","topic":"t"}}`)
	if code != 400 {
		t.Errorf("POST name=a config.name=b: %d %s; want 400", code, body)
	}
}

// Kafka Connect's Jackson reads config values that are JSON numbers or
// booleans as strings ("tasks.max": 1 is common in copied examples); here
// the whole request is a 400 "request body: json: cannot unmarshal number".
func TestReviewRest_CreateNumericConfigValue(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","initial_state":"STOPPED","config":{"connector.class":"idle","tasks.max":1,"topic":"t"}}`)
	if code != 201 {
		t.Errorf(`POST with "tasks.max": 1: %d %s; want 201 as Kafka Connect (values coerced to strings)`, code, body)
	}
}

// Kafka Connect reads initial_state case-insensitively
// (InitialState.forValue: valueOf(value.toUpperCase(Locale.ROOT))):
// "paused" creates a paused connector; here it is a 400.
func TestReviewRest_CreateInitialStateLowercase(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","initial_state":"paused","config":{"connector.class":"idle","topic":"t"}}`)
	if code != 201 {
		t.Errorf(`POST initial_state "paused": %d %s; want 201 (Kafka Connect upper-cases it)`, code, body)
	}
}

// Kafka Connect trims the name of POST /connectors ("String name =
// createRequest.name().trim()"); here " a " is refused as an invalid name.
func TestReviewRest_CreateNameTrimmed(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":" a ","initial_state":"STOPPED","config":{"connector.class":"idle","topic":"t"}}`)
	if code != 201 || !strings.Contains(body, `"name":"a"`) {
		t.Errorf(`POST name " a ": %d %s; want 201 for connector "a"`, code, body)
	}
}

// A partition number beyond int32 wraps in int32(p): partition 4294967296
// reads partition 0 instead of answering that no such partition exists
// (queryInt's own rule: a typo must not read from somewhere else than
// asked).
func TestReviewRest_PartitionNumberWraps(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []tlog.Record{{Value: []byte("in-partition-0")}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/topics/t/partitions/4294967296/records", "/topics/t/partitions/4294967296/offsets"} {
		code, body := call(t, srv, "GET", path, "")
		if code == 200 {
			t.Errorf("GET %s: 200 %s; want 400 or 404 (partition 4294967296 does not exist; this is partition 0)", path, body)
		}
	}
}

// PATCH …/offsets with no offsets ({} or {"offsets":[]}) is Kafka Connect's
// 400 "Partitions / offsets need to be provided for an alter offsets
// request"; here it answers 200 "altered successfully" and changes nothing.
func TestReviewRest_PatchOffsetsEmpty(t *testing.T) {
	srv, _, _ := newTestServer(t)
	for _, c := range []string{
		`{"name":"src","initial_state":"STOPPED","config":{"connector.class":"idle","topic":"t"}}`,
		`{"name":"snk","initial_state":"STOPPED","config":{"connector.class":"null","topics":"t"}}`,
	} {
		if code, body := call(t, srv, "POST", "/connectors", c); code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	for _, name := range []string{"src", "snk"} {
		for _, body := range []string{`{}`, `{"offsets":[]}`} {
			code, answer := call(t, srv, "PATCH", "/connectors/"+name+"/offsets", body)
			if code != 400 {
				t.Errorf("PATCH /connectors/%s/offsets %s: %d %s; want 400 (Kafka Connect: partitions / offsets need to be provided)", name, body, code, answer)
			}
		}
	}
}

// A source's one partition is {"pipeline": …} (GET …/offsets shows it);
// PATCH ignores the partition given and writes the offset as this
// source's position, so an entry naming another partition (copied from
// another connector's GET) silently moves this source. Kafka Connect
// stores an offset under the partition given, never under another one.
func TestReviewRest_PatchSourceOffsetsIgnoresPartition(t *testing.T) {
	srv, w, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"src","initial_state":"STOPPED","config":{"connector.class":"idle","topic":"t"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body := call(t, srv, "PATCH", "/connectors/src/offsets", `{"offsets":[{"partition":{"pipeline":"some-other-pipeline"},"offset":{"seq":42}}]}`)
	_, got := call(t, srv, "GET", "/connectors/src/offsets", "")
	if code == 200 && strings.Contains(got, `"seq":42`) {
		spec, _ := w.Spec("src")
		t.Errorf("PATCH with partition {pipeline: some-other-pipeline}: %d %s; GET now shows %s: the offset became the position of source src (partition {pipeline: %s}); want a 400 naming the source's partition",
			code, strings.TrimSpace(body), strings.TrimSpace(got), spec.Pipeline)
	}
}
