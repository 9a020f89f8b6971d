package rest

import (
	"strings"
	"testing"
)

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
