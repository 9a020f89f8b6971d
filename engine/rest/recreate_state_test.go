package rest

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
)

// connectorStateOf returns the connector state GET …/status shows.
func connectorStateOf(t *testing.T, srv *httptest.Server, name string) string {
	t.Helper()
	code, body := call(t, srv, "GET", "/connectors/"+name+"/status", "")
	if code != 200 {
		t.Fatalf("GET /connectors/%s/status = %d %s", name, code, body)
	}
	var st struct{ Connector struct{ State string } }
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st.Connector.State
}

// waitConnectorState waits until GET …/status shows the connector in
// state want (a worker applies the states other workers record as it
// reads them), and returns the state it shows last.
func waitConnectorState(t *testing.T, srv *httptest.Server, name, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a bound on a hang, not a speed check
	for {
		got := connectorStateOf(t, srv, name)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustCall calls the REST API and fails the test unless it answers want.
func mustCall(t *testing.T, srv *httptest.Server, want int, method, path, body string) {
	t.Helper()
	if code, got := call(t, srv, method, path, body); code != want {
		t.Fatalf("%s %s = %d %s; want %d", method, path, code, got, want)
	}
}

// genConfigIn is the REST config of a generator source created in the
// state initial (empty: no initial_state).
func genConfigIn(name, initial string) string {
	s := `{"name":"` + name + `",`
	if initial != "" {
		s += `"initial_state":"` + initial + `",`
	}
	return s + `"config":{"connector.class":"generator","topic":"` + recreateTopic + `","rate":"100000","batch.size":"10","max.events":"20"}}`
}

// checkRecreatedStates stops a connector created over REST, deletes it,
// and creates it again with the same name: as in Kafka Connect, which
// drops a deleted connector's target state, the new one starts RUNNING
// (POST without initial_state, or a PUT …/config that creates it), or in
// the POST's initial_state, whatever state the one before was left in.
func checkRecreatedStates(t *testing.T, srv *httptest.Server) {
	t.Helper()
	mustCall(t, srv, 201, "POST", "/connectors", genConfigIn("gen", ""))
	mustCall(t, srv, 204, "PUT", "/connectors/gen/stop", "")
	mustCall(t, srv, 204, "DELETE", "/connectors/gen", "")
	mustCall(t, srv, 201, "POST", "/connectors", genConfigIn("gen", ""))
	if got := connectorStateOf(t, srv, "gen"); got != "RUNNING" {
		t.Errorf("connector stopped, deleted and created again without initial_state is %s; want RUNNING, as in Kafka Connect", got)
	}

	mustCall(t, srv, 204, "PUT", "/connectors/gen/stop", "")
	mustCall(t, srv, 204, "DELETE", "/connectors/gen", "")
	mustCall(t, srv, 201, "POST", "/connectors", genConfigIn("gen", "PAUSED"))
	if got := connectorStateOf(t, srv, "gen"); got != "PAUSED" {
		t.Errorf("connector stopped, deleted and created again with initial_state PAUSED is %s; want PAUSED", got)
	}

	mustCall(t, srv, 204, "DELETE", "/connectors/gen", "")
	mustCall(t, srv, 201, "PUT", "/connectors/gen/config",
		`{"connector.class":"generator","topic":"`+recreateTopic+`","rate":"100000","batch.size":"10","max.events":"20"}`)
	if got := connectorStateOf(t, srv, "gen"); got != "RUNNING" {
		t.Errorf("connector paused, deleted and created again with PUT …/config is %s; want RUNNING", got)
	}
}

// The embedded backend keeps target states in the worker's memory only:
// a connector created again starts RUNNING or in its initial_state.
func TestREST_RecreatedConnector_StartsRunningOrInItsInitialState(t *testing.T) {
	srv, _, _ := newGeneratorServer(t)
	checkRecreatedStates(t, srv)
}

// On the kafka backend the target state is recorded in
// _tributary.targets, where a DELETE leaves it (other workers may still
// load the connector): a connector created again over REST still starts
// RUNNING or in its initial_state, and its state is the one recorded
// from then on, so a worker started afterwards agrees.
func TestREST_KafkaBackend_RecreatedConnector_StartsRunningOrInItsInitialState(t *testing.T) {
	_, addr := kafkaListener(t, recreateTopic)
	srvA, _ := kafkaWorker(t, addr, "a")
	checkRecreatedStates(t, srvA)

	// A worker started now takes the state recorded last: RUNNING.
	srvB, wB := kafkaWorker(t, addr, "b")
	if err := wB.Start(t.Context(), engine.ConnectorSpec{Pipeline: engine.RESTPipeline, Name: "gen", Kind: connect.KindSource, Connector: "generator", Topic: recreateTopic,
		Config: map[string]string{"rate": "100000", "batch.size": "10", "max.events": "20"}}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	if got := connectorStateOf(t, srvB, "gen"); got != "RUNNING" {
		t.Errorf("gen in a worker started after it was created again RUNNING is %s; want RUNNING", got)
	}
}

// A pipeline file's source stopped cluster-wide and deleted over REST in
// one worker stays STOPPED in the workers that still load the file's
// source, a worker started later included: a DELETE acts on the worker
// asked and leaves the recorded state. Created again over REST there, it
// is RUNNING, and as it takes up the pipeline's offsets it is the same
// connector as the file's: RUNNING in every worker.
func TestREST_KafkaBackend_PipelineSourceDeletedInOneWorker_StaysStoppedElsewhere(t *testing.T) {
	_, addr := kafkaListener(t, recreateTopic)
	srvA, wA := kafkaWorker(t, addr, "a")
	srvB, wB := kafkaWorker(t, addr, "b")
	ctx := t.Context()
	spec := engine.ConnectorSpec{Pipeline: "shop", Name: "gen", Kind: connect.KindSource, Connector: "generator", Topic: recreateTopic,
		Config: map[string]string{"rate": "100000", "batch.size": "10", "max.events": "20"}}
	for _, w := range []*engine.Worker{wA, wB} {
		if err := w.Start(ctx, spec, engine.StateRunning); err != nil {
			t.Fatal(err)
		}
	}
	waitOffsetSeq(t, srvA, "gen", 20) // stored: the one created again takes up pipeline shop
	mustCall(t, srvA, 204, "PUT", "/connectors/gen/stop", "")
	mustCall(t, srvA, 204, "DELETE", "/connectors/gen", "")
	srvC, wC := kafkaWorker(t, addr, "c")
	if err := wC.Start(ctx, spec, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	if got := connectorStateOf(t, srvC, "gen"); got != "STOPPED" {
		t.Errorf("the file's gen in a worker started after a DELETE in another is %s; want STOPPED: a DELETE acts on the worker asked, and the source stopped cluster-wide stays so", got)
	}
	if got := waitConnectorState(t, srvB, "gen", "STOPPED"); got != "STOPPED" {
		t.Errorf("the file's gen in worker b after a DELETE in worker a is %s; want STOPPED", got)
	}

	mustCall(t, srvA, 201, "POST", "/connectors", genConfigIn("gen", ""))
	if got := connectorStateOf(t, srvA, "gen"); got != "RUNNING" {
		t.Errorf("gen created again over REST is %s; want RUNNING", got)
	}
	// It is the file's gen to every worker: its state, RUNNING, too.
	if got := waitConnectorState(t, srvB, "gen", "RUNNING"); got != "RUNNING" {
		t.Errorf("the file's gen in worker b after gen was created again RUNNING in worker a is %s; want RUNNING", got)
	}
	code, body := call(t, srvA, "GET", "/connectors/gen/offsets", "")
	if code != 200 || !strings.Contains(body, `"partition":{"pipeline":"shop"}`) {
		t.Errorf("GET /connectors/gen/offsets = %d %s; want the partition {\"pipeline\":\"shop\"}", code, body)
	}
}
