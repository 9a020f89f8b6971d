package rest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// TestREST_SinkOffsetsPatch_ChecksPartitionsAndRange: PATCH of a stopped
// sink's offsets refuses unknown topics and partitions (as Kafka's
// AlterConsumerGroupOffsets does) and offsets past the partition's end or
// negative (the sink would start the partition over and deliver it again),
// with Kafka Connect's error body naming the entry; nothing of a refused
// PATCH is committed. An offset below the log start is accepted, with a
// note in the message.
func TestREST_SinkOffsetsPatch_ChecksPartitionsAndRange(t *testing.T) {
	srv, w, _, l := newTestServerLog(t)
	ctx := t.Context()
	if err := l.CreateTopic("t1", 3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "t1", 0, []tlog.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}, {Value: []byte("d")}, {Value: []byte("e")}}); err != nil {
		t.Fatal(err)
	}
	// Tiny segments and retention.bytes move the log start of old past 0.
	if err := l.CreateTopic("old", 1, map[string]string{tlog.ConfigSegmentBytes: "100", tlog.ConfigRetentionBytes: "300"}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := l.Append(ctx, "old", 0, []tlog.Record{{Value: []byte(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	l.EnforceRetention()
	oldStart, _, err := l.Offsets("old", 0)
	if err != nil || oldStart == 0 {
		t.Fatalf("log start of old = %d, %v; want > 0", oldStart, err)
	}
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "out", Kind: connect.KindSink, Connector: "null", Topics: []string{"t1", "old"}, Group: "outg"}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(ctx, "out"); err != nil {
		t.Fatal(err)
	}
	entry := func(topic string, p, off int64) string {
		return fmt.Sprintf(`{"partition":{"kafka_topic":%q,"kafka_partition":%d},"offset":{"kafka_offset":%d}}`, topic, p, off)
	}
	patch := func(entries ...string) (int, apiError) {
		t.Helper()
		code, body := call(t, srv, "PATCH", "/connectors/out/offsets", `{"offsets":[`+strings.Join(entries, ",")+`]}`)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatalf("PATCH answer is not JSON: %v\n%s", err, body)
		}
		return code, e
	}
	for _, c := range []struct {
		name    string
		entries []string
		want    []string
	}{
		{"unknown partition", []string{entry("t1", 7, 42)}, []string{"offsets[0]", "kafka_partition 7", "t1 has no partition 7 (it has 3)"}},
		{"unknown topic", []string{entry("t1", 0, 1), entry("nosuch", 0, 1)}, []string{"offsets[1]", "topic nosuch does not exist"}},
		{"past the end", []string{entry("t1", 0, 999999999)}, []string{"offsets[0]", "offset 999999999 is past the log end offset 5 of t1-0", "[0, 5]"}},
		{"negative", []string{entry("t1", 1, -1)}, []string{"kafka_offset -1 is negative", "[0, 0]"}},
		{"one bad entry refuses all", []string{entry("t1", 0, 3), entry("t1", 2, 1)}, []string{"offsets[1]", "past the log end offset 0 of t1-2"}},
	} {
		code, e := patch(c.entries...)
		if code != 400 || e.ErrorCode != 400 {
			t.Errorf("%s: PATCH = %d %+v, want 400", c.name, code, e)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(e.Message, want) {
				t.Errorf("%s: message %q, want it to contain %q", c.name, e.Message, want)
			}
		}
	}
	if got := l.Groups().Committed("outg"); len(got) != 0 {
		t.Fatalf("committed after refused PATCHes = %+v, want nothing", got)
	}

	// The log end is a valid offset (nothing left to read); below the log
	// start is accepted with a note.
	code, e := patch(entry("t1", 0, 5), entry("t1", 1, 0))
	if code != 200 || e.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("PATCH of valid offsets = %d %+v", code, e)
	}
	code, e = patch(entry("old", 0, 0))
	if code != 200 || !strings.HasPrefix(e.Message, "The offsets for this connector have been altered successfully. Note: ") ||
		!strings.Contains(e.Message, fmt.Sprintf("offset 0 is below the log start offset %d of old-0", oldStart)) ||
		!strings.Contains(e.Message, "auto.offset.reset=earliest") {
		t.Fatalf("PATCH below the log start = %d %+v, want 200 with a note", code, e)
	}
	want := map[tlog.TopicPartition]int64{{Topic: "t1", Partition: 0}: 5, {Topic: "t1", Partition: 1}: 0, {Topic: "old", Partition: 0}: 0}
	got := map[tlog.TopicPartition]int64{}
	for _, c := range l.Groups().Committed("outg") {
		got[tlog.TopicPartition{Topic: c.Topic, Partition: c.Partition}] = c.Offset
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed = %v, want %v", got, want)
	}
}

// PATCH …/offsets with no offsets ({} or {"offsets":[]}) is Kafka
// Connect's 400 "Partitions / offsets need to be provided for an alter
// offsets request", never a 200 "altered successfully" that changes
// nothing.
func TestPatchOffsets_NoOffsetsIs400(t *testing.T) {
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
			if code != 400 || !strings.Contains(answer, "Partitions / offsets need to be provided for an alter offsets request") {
				t.Errorf("PATCH /connectors/%s/offsets %s: %d %s; want 400 (Kafka Connect: partitions / offsets need to be provided)", name, body, code, answer)
			}
		}
	}
}

// A source's one partition is {"pipeline": …} (GET …/offsets shows it).
// PATCH refuses an entry naming another partition (copied from another
// connector's GET, say), saying which one the source has, instead of
// making its offset this source's position; the source's own partition
// is accepted.
func TestPatchOffsets_SourcePartitionMustBeItsOwn(t *testing.T) {
	srv, w, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"src","initial_state":"STOPPED","config":{"connector.class":"idle","topic":"t"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	spec, err := w.Spec("src")
	if err != nil {
		t.Fatal(err)
	}
	for _, partition := range []string{`{"pipeline":"some-other-pipeline"}`, `{"pipeline":"` + spec.Pipeline + `","x":1}`, `{}`} {
		code, body := call(t, srv, "PATCH", "/connectors/src/offsets", `{"offsets":[{"partition":`+partition+`,"offset":{"seq":42}}]}`)
		want := `it has one partition, {\"pipeline\":\"` + spec.Pipeline + `\"}`
		if code != 400 || !strings.Contains(body, want) {
			t.Errorf("PATCH with partition %s: %d %s; want 400 saying %s", partition, code, strings.TrimSpace(body), want)
		}
		if _, got := call(t, srv, "GET", "/connectors/src/offsets", ""); strings.Contains(got, `"seq":42`) {
			t.Errorf("after PATCH with partition %s, GET shows %s: the offset became source src's position", partition, got)
		}
	}
	code, body := call(t, srv, "PATCH", "/connectors/src/offsets", `{"offsets":[{"partition":{"pipeline":"`+spec.Pipeline+`"},"offset":{"seq":42}}]}`)
	if code != 200 {
		t.Fatalf("PATCH with the source's own partition: %d %s", code, body)
	}
	if _, got := call(t, srv, "GET", "/connectors/src/offsets", ""); !strings.Contains(got, `"seq":42`) {
		t.Errorf("after PATCH with the source's own partition, GET shows %s; want seq 42", got)
	}
}
