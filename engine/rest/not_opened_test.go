package rest

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// TestREST_DescribeTopic_NotOpened: GET /topics/{t} describes a topic the
// log left closed (more partitions than its limit) from what it stored:
// 200 with its id, configs and one entry per partition whose offsets and
// size are null (unknown, not 0), and the status GET /topics?expand=status
// gives it. An open topic's description has the status OPEN.
func TestREST_DescribeTopic_NotOpened(t *testing.T) {
	dir := t.TempDir()
	l, err := tlog.Open(tlog.Options{Dir: dir, MaxPartitions: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("big", 3, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	id, err := l.TopicID("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	srv, _, _, _ := newTestServerOpts(t, tlog.Options{Dir: dir, MaxPartitions: 2})
	if code, body := call(t, srv, "POST", "/topics", `{"name":"web","partitions":1}`); code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}

	type topicAnswer struct {
		Name       string            `json:"name"`
		ID         string            `json:"id"`
		Partitions []map[string]any  `json:"partitions"`
		Overrides  map[string]string `json:"overrides"`
		Config     map[string]string `json:"config"`
		Status     *TopicStatusJSON  `json:"status"`
	}
	code, body := call(t, srv, "GET", "/topics/big", "")
	if code != 200 {
		t.Fatalf("GET /topics/big = %d %s, want 200 with the stored description", code, body)
	}
	var got topicAnswer
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("GET /topics/big: %v\n%s", err, body)
	}
	if got.Name != "big" || got.ID != id {
		t.Errorf("name, id = %q, %q, want big, %q", got.Name, got.ID, id)
	}
	if !reflect.DeepEqual(got.Overrides, map[string]string{"retention.ms": "1000"}) || got.Config["retention.ms"] != "1000" || got.Config["cleanup.policy"] != "delete" {
		t.Errorf("overrides = %v, config = %v, want retention.ms=1000 over the defaults", got.Overrides, got.Config)
	}
	var wantParts []map[string]any
	for p := range 3 {
		wantParts = append(wantParts, map[string]any{"partition": float64(p), "log_start_offset": nil, "log_end_offset": nil, "size": nil})
	}
	if !reflect.DeepEqual(got.Partitions, wantParts) {
		t.Errorf("partitions = %v, want %v", got.Partitions, wantParts)
	}
	if got.Status == nil || got.Status.State != TopicNotOpened || got.Status.Partitions != 3 || got.Status.Limit != 2 ||
		!strings.Contains(got.Status.Message, "TRIBUTARY_MAX_PARTITIONS=3") {
		t.Errorf("status = %+v, want NOT_OPENED, 3 partitions, limit 2, a message naming TRIBUTARY_MAX_PARTITIONS=3", got.Status)
	}

	// The same status as in the list.
	code, body = call(t, srv, "GET", "/topics?expand=status", "")
	var list map[string]TopicListEntry
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("GET /topics?expand=status = %d %s (%v)", code, body, err)
	}
	if got.Status != nil && list["big"].Status != *got.Status {
		t.Errorf("GET /topics/big status %+v, GET /topics?expand=status %+v: want the same", *got.Status, list["big"].Status)
	}

	code, body = call(t, srv, "GET", "/topics/web", "")
	var open topicAnswer
	if err := json.Unmarshal([]byte(body), &open); code != 200 || err != nil {
		t.Fatalf("GET /topics/web = %d %s (%v)", code, body, err)
	}
	if open.Status == nil || *open.Status != (TopicStatusJSON{State: TopicOpen}) {
		t.Errorf("open topic status = %+v, want OPEN", open.Status)
	}
	want := []map[string]any{{"partition": float64(0), "log_start_offset": float64(0), "log_end_offset": float64(0), "size": float64(0)}}
	if !reflect.DeepEqual(open.Partitions, want) {
		t.Errorf("open topic partitions = %v, want %v", open.Partitions, want)
	}
	if code, _ := call(t, srv, "GET", "/topics/nope", ""); code != 404 {
		t.Errorf("GET /topics/nope = %d, want 404", code)
	}
}
