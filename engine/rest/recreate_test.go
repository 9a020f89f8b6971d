package rest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/kafkabackend"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

// recreateTopic is where the generator sources of these tests write: one
// partition, so that its records are read in order.
const recreateTopic = "web"

// newGeneratorServer is newTestServerLog with the generator source, whose
// seq (its position, {"seq":N}) continues from a stored position and
// starts at 1 without one: which of the two a source did shows in its
// records.
func newGeneratorServer(t *testing.T) (*httptest.Server, *engine.Worker, *tlog.Log) {
	t.Helper()
	srv, w, _, l := newTestServerLog(t)
	w.Registry().MustRegister(generator.Connector())
	if err := l.CreateTopic(recreateTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	return srv, w, l
}

// generatorConfig is the REST config of a generator source that stops
// after the event of seq maxEvents (counted across restarts).
func generatorConfig(name string, maxEvents int) string {
	return `{"name":"` + name + `","config":{"connector.class":"generator","topic":"` + recreateTopic +
		`","rate":"100000","batch.size":"10","max.events":"` + strconv.Itoa(maxEvents) + `"}}`
}

// waitOffsetSeq waits until GET /connectors/{name}/offsets shows the
// position {"seq":seq}, and returns the answer.
func waitOffsetSeq(t *testing.T, srv *httptest.Server, name string, seq int) string {
	t.Helper()
	want := `"offset":{"seq":` + strconv.Itoa(seq) + `}`
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a speed check
	for {
		code, body := call(t, srv, "GET", "/connectors/"+name+"/offsets", "")
		if code == 200 && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /connectors/%s/offsets = %d %s; want %s", name, code, body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seqCounts returns how often each seq appears in the records of
// recreateTopic.
func seqCounts(t *testing.T, l *tlog.Log) map[int]int {
	t.Helper()
	counts := map[int]int{}
	for off := int64(0); ; {
		_, end, err := l.Offsets(recreateTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if off >= end {
			return counts
		}
		res, err := l.Read(t.Context(), recreateTopic, 0, off, tlog.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			var ev struct{ Seq int }
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				t.Fatalf("record %d of %s is no generator event: %v", r.Offset, recreateTopic, err)
			}
			counts[ev.Seq]++
		}
		off = res.NextOffset
	}
}

// checkResumed checks that recreateTopic holds seq 1 to last, each once:
// a source that started over instead of resuming writes seq 1 (and what
// follows) again.
func checkResumed(t *testing.T, l *tlog.Log, last int) {
	t.Helper()
	counts := seqCounts(t, l)
	if counts[1] != 1 {
		t.Errorf("seq 1 is in %s %d times: the re-created source started over instead of resuming from its stored offsets", recreateTopic, counts[1])
	}
	for seq := 1; seq <= last; seq++ {
		if counts[seq] == 0 {
			t.Errorf("seq %d is missing from %s", seq, recreateTopic)
		}
	}
	if len(counts) != last {
		t.Errorf("%s holds %d distinct seqs, want %d (1 to %d)", recreateTopic, len(counts), last, last)
	}
}

// As in Kafka Connect, a source's offsets outlive DELETE /connectors/{name}:
// a source created over REST, deleted, and created again with the same
// name resumes from the position the first one stored.
func TestREST_SourceRecreated_ResumesFromItsOffsets(t *testing.T) {
	srv, _, l := newGeneratorServer(t)
	if code, body := call(t, srv, "POST", "/connectors", generatorConfig("gen", 50)); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	waitOffsetSeq(t, srv, "gen", 50)
	if code, body := call(t, srv, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors", generatorConfig("gen", 80)); code != 201 {
		t.Fatalf("create again: %d %s", code, body)
	}
	waitOffsetSeq(t, srv, "gen", 80)
	checkResumed(t, l, 80)
}

// A pipeline file's source deleted over REST and created again over REST
// with the same name is the same connector to the user, as in Kafka
// Connect, where offsets are keyed by the connector's name: it resumes
// from the position stored under the file's pipeline, which GET …/offsets
// shows as its partition.
func TestREST_PipelineSourceRecreatedOverREST_ResumesFromItsOffsets(t *testing.T) {
	srv, w, l := newGeneratorServer(t)
	file := `version: 1
name: shop
sources:
  - name: gen
    connector: generator
    topic: ` + recreateTopic + `
    config: {rate: 100000, batch.size: 10, max.events: 50}
`
	catalog := pipelines.Specs{pipelines.KindSource: {"generator": generator.Connector().Spec}}
	p, err := pipelines.Parse("shop.yaml", []byte(file), pipelines.Options{Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StartPipeline(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	waitOffsetSeq(t, srv, "gen", 50)
	if code, body := call(t, srv, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors", generatorConfig("gen", 80)); code != 201 {
		t.Fatalf("create again: %d %s", code, body)
	}
	got := waitOffsetSeq(t, srv, "gen", 80)
	if !strings.Contains(got, `"partition":{"pipeline":"shop"}`) {
		t.Errorf("GET /connectors/gen/offsets = %s; want the partition of the pipeline that stored them, {\"pipeline\":\"shop\"}", got)
	}
	checkResumed(t, l, 80)

	// Deleted again and created with PUT …/config: the same.
	if code, body := call(t, srv, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	var req struct{ Config map[string]string }
	if err := json.Unmarshal([]byte(generatorConfig("gen", 90)), &req); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(req.Config)
	if code, body := call(t, srv, "PUT", "/connectors/gen/config", string(cfg)); code != 201 {
		t.Fatalf("create with PUT: %d %s", code, body)
	}
	waitOffsetSeq(t, srv, "gen", 90)
	checkResumed(t, l, 90)
}

// A user who wants a fresh start deletes the offsets while the connector
// is STOPPED (DELETE …/offsets), as in Kafka Connect: the source created
// again with that name then starts at seq 1, even where an older position
// of that name is stored under another pipeline (one created over REST
// before the file's source ran).
func TestREST_SourceRecreatedAfterOffsetsReset_StartsOver(t *testing.T) {
	srv, w, l := newGeneratorServer(t)
	ctx := t.Context()
	// An older incarnation's position under the REST pipeline, then the
	// file's source, which stops at seq 50.
	if err := w.Start(ctx, engine.ConnectorSpec{Pipeline: "rest", Name: "gen", Kind: connect.KindSource, Connector: "generator",
		Topic: "old", Config: map[string]string{"rate": "100000", "batch.size": "10", "max.events": "20"}}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	waitOffsetSeq(t, srv, "gen", 20)
	if err := w.Delete(ctx, "gen"); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, engine.ConnectorSpec{Pipeline: "shop", Name: "gen", Kind: connect.KindSource, Connector: "generator",
		Topic: recreateTopic, Config: map[string]string{"rate": "100000", "batch.size": "10", "max.events": "50"}}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	waitOffsetSeq(t, srv, "gen", 50)
	if code, body := call(t, srv, "PUT", "/connectors/gen/stop", ""); code != 204 {
		t.Fatalf("stop: %d %s", code, body)
	}
	if code, body := call(t, srv, "DELETE", "/connectors/gen/offsets", ""); code != 200 {
		t.Fatalf("delete offsets: %d %s", code, body)
	}
	if code, body := call(t, srv, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/connectors", generatorConfig("gen", 10)); code != 201 {
		t.Fatalf("create again: %d %s", code, body)
	}
	waitOffsetSeq(t, srv, "gen", 10)
	if counts := seqCounts(t, l); counts[1] != 2 || counts[10] != 2 || counts[11] != 1 {
		t.Errorf("seq 1, 10, 11 are in %s %d, %d, %d times; want 2, 2, 1: the source created again after its offsets were reset must start over at seq 1",
			recreateTopic, counts[1], counts[10], counts[11])
	}
}

// kafkaWorker starts a worker (and its REST API) whose log is the Kafka
// listener at addr, with the generator source.
func kafkaWorker(t *testing.T, addr, id string) (*httptest.Server, *engine.Worker) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	kb, err := kafkabackend.New(t.Context(), kafkabackend.Options{Brokers: []string{addr}, Logger: logger,
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := connect.NewRegistry()
	reg.MustRegister(generator.Connector())
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: kb, Connectors: reg, Logger: logger, WorkerID: id})
	if err != nil {
		kb.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(w, nil, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		kb.Close()
	})
	return srv, w
}

// On the kafka backend, shared by workers: a source created over REST on
// one worker with the name of a pipeline source that runs on another
// (which holds its lease) does not share that one's offsets: it starts
// over under the REST pipeline. Once that one is deleted there, a source
// created again with its name takes up the position it stored, which this
// worker's own store had never seen.
func TestREST_KafkaBackend_RecreatedSource_NeverSharesALiveSourcesOffsets(t *testing.T) {
	l, addr := kafkaListener(t, recreateTopic)
	srvA, wA := kafkaWorker(t, addr, "a")
	srvB, _ := kafkaWorker(t, addr, "b")
	ctx := t.Context()
	if err := wA.Start(ctx, engine.ConnectorSpec{Pipeline: "shop", Name: "gen", Kind: connect.KindSource, Connector: "generator", Topic: recreateTopic,
		Config: map[string]string{"rate": "100000", "batch.size": "10", "max.events": "50"}}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	waitOffsetSeq(t, srvA, "gen", 50)

	// Live on worker a: worker b's gen is another connector.
	if code, body := call(t, srvB, "POST", "/connectors", `{"name":"gen","initial_state":"STOPPED","config":{"connector.class":"generator","topic":"other"}}`); code != 201 {
		t.Fatalf("create on worker b: %d %s", code, body)
	}
	if code, body := call(t, srvB, "GET", "/connectors/gen/offsets", ""); code != 200 || body != `{"offsets":[]}`+"\n" {
		t.Fatalf("GET offsets of worker b's gen = %d %s; want none: it must not share the offsets of the gen running on worker a", code, body)
	}
	if code, body := call(t, srvB, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete on worker b: %d %s", code, body)
	}

	// Deleted on worker a: worker b's gen created again resumes from it.
	if code, body := call(t, srvA, "DELETE", "/connectors/gen", ""); code != 204 {
		t.Fatalf("delete on worker a: %d %s", code, body)
	}
	if code, body := call(t, srvB, "POST", "/connectors", generatorConfig("gen", 80)); code != 201 {
		t.Fatalf("create again on worker b: %d %s", code, body)
	}
	got := waitOffsetSeq(t, srvB, "gen", 80)
	if !strings.Contains(got, `"partition":{"pipeline":"shop"}`) {
		t.Errorf("GET /connectors/gen/offsets on worker b = %s; want the partition {\"pipeline\":\"shop\"}", got)
	}
	checkResumed(t, l, 80)
}
