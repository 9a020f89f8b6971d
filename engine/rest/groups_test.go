package rest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestREST_Groups_SinkOwnsGroup: while a sink consumes as a group, the
// group shows the sink as its member and refuses resets, deletes and
// commits from outside (Kafka's GROUP_NOT_EMPTY); once the sink is stopped
// they work.
func TestREST_Groups_SinkOwnsGroup(t *testing.T) {
	srv, w, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/topics", `{"name":"t","partitions":2}`)
	if code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/topics/t/records", `{"records":[{"partition":0,"value":"a"},{"partition":1,"value":"b"}]}`); code != 200 {
		t.Fatalf("produce = %d %s", code, body)
	}
	if err := w.Start(t.Context(), engine.ConnectorSpec{Name: "snk", Kind: connect.KindSink, Connector: "null", Topics: []string{"t"}, Group: "g"}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body = call(t, srv, "GET", "/groups/g", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe = %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var g GroupJSON
	if err := json.Unmarshal([]byte(body), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Members) != 1 || g.Members[0].ConsumerID != "connector-consumer-snk-0" || g.Members[0].Host != "/127.0.0.1" {
		t.Fatalf("members = %+v", g.Members)
	}
	if len(g.Partitions) != 2 || g.Partitions[0].ConsumerID != "connector-consumer-snk-0" || g.Partitions[1].ClientID != "connector-consumer-snk-0" {
		t.Fatalf("partitions = %+v", g.Partitions)
	}

	reset := `{"spec":{"Mode":` + mustJSON(t, tlog.ResetToEarliest) + `,"Topics":[{"Topic":"t"}]},"execute":true}`
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/groups/g/reset", reset},
		{"DELETE", "/groups/g", ""},
		{"POST", "/groups/g/offsets", `{"offsets":[{"topic":"t","partition":0,"current_offset":0}]}`},
	} {
		code, body := call(t, srv, c.method, c.path, c.body)
		if code != 409 || !strings.Contains(body, "tributary connectors stop snk") ||
			!strings.Contains(body, "tributary connectors offsets snk --set") || !strings.Contains(body, "PATCH|DELETE /connectors/snk/offsets") {
			t.Errorf("%s %s while the sink runs = %d %s, want 409 with the hint", c.method, c.path, code, body)
		}
	}
	// A dry run changes nothing and stays allowed.
	if code, body := call(t, srv, "POST", "/groups/g/reset", strings.Replace(reset, `"execute":true`, `"execute":false`, 1)); code != 200 {
		t.Errorf("dry run = %d %s", code, body)
	}

	if err := w.Stop(t.Context(), "snk"); err != nil {
		t.Fatal(err)
	}
	_, body = call(t, srv, "GET", "/groups/g", "")
	if g = (GroupJSON{}); json.Unmarshal([]byte(body), &g) != nil || len(g.Members) != 0 || strings.Contains(body, "connector-consumer") {
		t.Fatalf("describe after stop = %s", body)
	}
	if code, body := call(t, srv, "POST", "/groups/g/reset", reset); code != 200 {
		t.Fatalf("reset after stop = %d %s", code, body)
	}
	if code, body := call(t, srv, "DELETE", "/groups/g", ""); code != 204 {
		t.Fatalf("delete after stop = %d %s", code, body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREST_Groups_ListenerMembers: members that joined through the Kafka
// listener show in the description, and the group refuses outside commits with
// 409.
func TestREST_Groups_ListenerMembers(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	a := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "t", []int32{0}
	a.Topics = append(a.Topics, at)
	err := l.Groups().SetMembership("kc", tlog.Membership{State: "Stable", Generation: 1, ProtocolType: "consumer", Protocol: "range", Leader: "rdkafka-1",
		Members: []tlog.GroupMember{{ID: "rdkafka-1", ClientID: "rdkafka", Host: "/10.0.0.1", Assignment: a.AppendTo(nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	code, body := call(t, srv, "GET", "/groups/kc", "")
	var g GroupJSON
	if code != 200 || json.Unmarshal([]byte(body), &g) != nil {
		t.Fatalf("describe = %d %s", code, body)
	}
	want := GroupMemberJSON{ConsumerID: "rdkafka-1", Host: "/10.0.0.1", ClientID: "rdkafka"}
	if len(g.Members) != 1 || g.Members[0] != want || len(g.Partitions) != 1 || g.Partitions[0].ConsumerID != "rdkafka-1" {
		t.Fatalf("describe = %+v", g)
	}
	if code, body := call(t, srv, "POST", "/groups/kc/offsets", `{"offsets":[{"topic":"t","partition":0,"current_offset":0}]}`); code != 409 {
		t.Errorf("commit with a member = %d %s, want 409", code, body)
	}
}

// TestREST_Groups_ResetBodyErrors: a reset body without a mode, with a mode
// that does not exist or with fields outside "spec" answers 400 naming the
// fields expected and the modes by their kafka-consumer-groups.sh names,
// which the body may use.
func TestREST_Groups_ResetBodyErrors(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	shape := []string{`"spec"`, `"Mode"`, "to-earliest", "to-latest", "to-offset", "to-datetime", "by-duration", "shift-by", "to-current", `"AllTopics"`, `"Topics"`, `"execute"`}
	for _, c := range []struct {
		name, body string
		also       []string
	}{
		{"empty", `{}`, []string{"no mode"}},
		{"fields outside spec", `{"mode":"to-earliest","topics":[{"topic":"t"}]}`, []string{`unknown field "mode"`}},
		{"unknown mode", `{"spec":{"Mode":"to-earlist","AllTopics":true}}`, []string{`"to-earlist"`}},
		{"unknown mode number", `{"spec":{"Mode":99,"AllTopics":true}}`, []string{"99"}},
	} {
		code, body := call(t, srv, "POST", "/groups/g9/reset", c.body)
		if code != 400 {
			t.Errorf("%s: reset = %d %s, want 400", c.name, code, body)
			continue
		}
		for _, s := range append(shape, c.also...) {
			if !strings.Contains(body, strings.ReplaceAll(s, `"`, `\"`)) {
				t.Errorf("%s: reset = %s, want it to mention %s", c.name, body, s)
			}
		}
		if strings.Contains(body, "mode 0") {
			t.Errorf("%s: reset = %s names the internal mode 0", c.name, body)
		}
	}
	code, body := call(t, srv, "POST", "/groups/g9/reset", `{"spec":{"Mode":"to-latest","Topics":[{"Topic":"t"}]}}`)
	if code != 200 || !strings.Contains(body, `"NewOffset":0`) {
		t.Errorf("reset with the mode by name = %d %s, want 200 and a plan", code, body)
	}
}
