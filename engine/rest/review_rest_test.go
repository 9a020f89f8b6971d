package rest

import (
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

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
