package rest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/engine"
)

// TestREST_KafkaConnectErrorKeys: Kafka Connect's error-handling keys are
// accepted: errors.retry.timeout becomes a retry count (exactly for -1
// and 0; for a budget in ms the retries whose waits fit in it), the ones
// that mean nothing here are ignored with a warning that says what the
// worker does instead, and a value of the wrong type is refused as Kafka
// Connect refuses it.
func TestREST_KafkaConnectErrorKeys(t *testing.T) {
	srv, w, logs := newTestServer(t)
	create := func(name, extra string) (int, string) {
		t.Helper()
		return call(t, srv, "POST", "/connectors", `{"name":"`+name+`","config":{"connector.class":"null","topics":"t"`+extra+`}}`)
	}
	for _, c := range []struct {
		name, extra string
		retries     int
		warn        string // in the worker's log; "" none
	}{
		{"budget", `,"errors.retry.timeout":"60000"`, 11, "taken as errors.retries"},
		{"budget_slow", `,"errors.retry.timeout":"60000","errors.retry.delay.initial.ms":"1000","errors.retry.delay.max.ms":"30000"`, 5, "taken as errors.retries"},
		{"tiny", `,"errors.retry.timeout":"1"`, 1, "taken as errors.retries"},
		{"forever", `,"errors.retry.timeout":"-1"`, -1, ""},
		{"never", `,"errors.retry.timeout":"0"`, 0, ""},
		{"both", `,"errors.retry.timeout":"60000","errors.retries":"3"`, 3, "ignoring errors.retry.timeout: errors.retries is set"},
		{"log", `,"errors.log.enable":"true"`, 0, "whatever errors.log.enable says"},
		{"logmsg", `,"errors.log.include.messages":"true"`, 0, "has no setting to log record contents"},
		{"hdr_on", `,"errors.deadletterqueue.context.headers.enable":"true"`, 0, ""},
		{"hdr_off", `,"errors.deadletterqueue.context.headers.enable":"false"`, 0, "always carry the __connect.errors.* headers"},
		{"repl", `,"errors.deadletterqueue.topic.replication.factor":"3"`, 0, "no replication factor of its own"},
	} {
		before := len(logs.String())
		code, body := create(c.name, c.extra)
		if code != 201 {
			t.Fatalf("%s: POST = %d %s", c.name, code, body)
		}
		spec, err := w.Spec(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Errors.Retries != c.retries {
			t.Errorf("%s: retries %d, want %d", c.name, spec.Errors.Retries, c.retries)
		}
		logged := logs.String()[before:]
		switch {
		case c.warn == "" && strings.Contains(logged, "level=WARN"):
			t.Errorf("%s: unexpected warning: %s", c.name, logged)
		case c.warn != "" && (!strings.Contains(logged, c.warn) || !strings.Contains(logged, "connector="+c.name)):
			t.Errorf("%s: log %q, want a warning with %q", c.name, logged, c.warn)
		}
	}

	// A PATCH of the timeout replaces the count an earlier one became.
	if code, body := call(t, srv, "PATCH", "/connectors/budget/config", `{"errors.retry.timeout":"-1"}`); code != 200 || !strings.Contains(body, `"errors.retries":"-1"`) {
		t.Fatalf("PATCH errors.retry.timeout = %d %s", code, body)
	}
	if spec, _ := w.Spec("budget"); spec.Errors.Retries != -1 {
		t.Errorf("after PATCH: retries %d, want -1", spec.Errors.Retries)
	}

	// A refused config logs no warning about the keys it ignores.
	before := len(logs.String())
	if code, body := create("refused", `,"errors.log.enable":"true","tasks.max":"2"`); code != 400 {
		t.Fatalf("POST with tasks.max=2 = %d %s", code, body)
	}
	if logged := logs.String()[before:]; strings.Contains(logged, "ignoring") {
		t.Errorf("a refused config logged: %s", logged)
	}

	for _, bad := range []struct{ extra, msg string }{
		{`,"errors.log.enable":"yes please"`, "Invalid value yes please for configuration errors.log.enable: Expected value to be either true or false"},
		{`,"errors.retry.timeout":"soon"`, "Invalid value soon for configuration errors.retry.timeout: must be an integer of at least -1"},
		{`,"errors.deadletterqueue.topic.replication.factor":"0"`, "Invalid value 0 for configuration errors.deadletterqueue.topic.replication.factor"},
	} {
		code, body := create("bad", bad.extra)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 || e.ErrorCode != 400 {
			t.Fatalf("%s: POST = %d %s", bad.extra, code, body)
		}
		want := "Connector configuration is invalid and contains the following 1 error(s):\n" + bad.msg
		if !strings.HasPrefix(e.Message, want) || !strings.HasSuffix(e.Message, "\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`") {
			t.Errorf("%s: message %q, want it to start %q and end with Kafka Connect's last line", bad.extra, e.Message, want)
		}
	}
}

func TestRetriesWithin(t *testing.T) {
	for _, c := range []struct {
		budget, initial, longest time.Duration
		want                     int
	}{
		{60 * time.Second, 100 * time.Millisecond, 10 * time.Second, 11}, // 12.7s in 7, then 10s each
		{300 * time.Millisecond, 100 * time.Millisecond, 10 * time.Second, 2},
		{time.Millisecond, 100 * time.Millisecond, 10 * time.Second, 1},
		{time.Second, time.Second, time.Second, 1},
		{3 * time.Second, time.Second, time.Second, 3},
	} {
		if got := retriesWithin(c.budget, c.initial, c.longest); got != c.want {
			t.Errorf("retriesWithin(%s, %s, %s) = %d, want %d", c.budget, c.initial, c.longest, got, c.want)
		}
	}
}

// TestREST_ConfigErrorsShape: every problem of a POST or PUT is one line
// of Kafka Connect's 400 message; an unknown key is named with the
// connector's keys and the worker's.
func TestREST_ConfigErrorsShape(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"k1","config":{"connector.class":"idle","topic":"t","errors.retry.timout":"60000"}}`)
	if code != 400 {
		t.Fatalf("POST unknown key = %d %s", code, body)
	}
	golden(t, "create_unknown_key", body)

	code, body = call(t, srv, "PUT", "/connectors/k2/config", `{"connector.class":"null","tasks.max":"2","errors.tolerance":"some","bogus":"1"}`)
	if code != 400 {
		t.Fatalf("PUT with problems = %d %s", code, body)
	}
	golden(t, "put_problems", body)
}

// TestREST_RestartIncludeTasks: POST …/restart with includeTasks and
// onlyFailed answers as KIP-745 says: 202 and the status with RESTARTING
// for each instance restarted; with onlyFailed only failed ones are, so a
// healthy connector is left running.
func TestREST_RestartIncludeTasks(t *testing.T) {
	srv, w, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"src","config":{"connector.class":"idle","topic":"t"}}`); code != 201 {
		t.Fatalf("create = %d %s", code, body)
	}
	waitTask := func(want engine.State) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, _ := w.Status("src")
			if len(st.Tasks) == 1 && st.Tasks[0].State == want && st.State == engine.StateRunning {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("task never %s: %+v", want, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitTask(engine.StateRunning)
	for _, q := range []string{"includeTasks=true&onlyFailed=true", "onlyFailed=true", "includeTasks=false&onlyFailed=true"} {
		code, body := call(t, srv, "POST", "/connectors/src/restart?"+q, "")
		if code != 202 {
			t.Fatalf("%s: restart = %d %s", q, code, body)
		}
		golden(t, "restart_only_failed", body)
		// Nothing was restarted: the task is still RUNNING (a restart
		// shows RESTARTING at once).
		if st, _ := w.Status("src"); st.Tasks[0].State != engine.StateRunning {
			t.Fatalf("%s restarted a healthy task: %+v", q, st)
		}
	}
	code, body := call(t, srv, "POST", "/connectors/src/restart?includeTasks=true&onlyFailed=false", "")
	if code != 202 {
		t.Fatalf("restart = %d %s", code, body)
	}
	golden(t, "restart_include_tasks", body)
	waitTask(engine.StateRunning)
	code, body = call(t, srv, "POST", "/connectors/src/restart?includeTasks=false&onlyFailed=false", "")
	if code != 204 || body != "" {
		t.Fatalf("restart without includeTasks = %d %q, want 204", code, body)
	}
	waitTask(engine.StateRunning)
	code, body = call(t, srv, "POST", "/connectors/src/restart?onlyFailed=false&includeTasks=false", "")
	if code != 204 {
		t.Fatalf("restart = %d %s", code, body)
	}
	waitTask(engine.StateRunning)
	if code, _ := call(t, srv, "PUT", "/connectors/src/stop", ""); code != 204 {
		t.Fatal("stop")
	}
	code, body = call(t, srv, "POST", "/connectors/src/restart?includeTasks=true", "")
	if code != 202 || !strings.Contains(body, `"state":"STOPPED"`) || strings.Contains(body, "RESTARTING") {
		t.Fatalf("restart of a stopped connector = %d %s, want it STOPPED and nothing RESTARTING", code, body)
	}
}

// TestREST_RestartOnlyFailed: with onlyFailed, a FAILED task restarts only
// with includeTasks, and the connector (which never fails here) does not.
func TestREST_RestartOnlyFailed(t *testing.T) {
	srv, w, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"b","config":{"connector.class":"broken","topic":"t"}}`); code != 201 {
		t.Fatalf("create = %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := w.Status("b")
		if len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task never FAILED: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, body := call(t, srv, "POST", "/connectors/b/restart?onlyFailed=true", "")
	if code != 202 || strings.Contains(body, "RESTARTING") || !strings.Contains(body, `"state":"FAILED"`) {
		t.Fatalf("restart onlyFailed without includeTasks = %d %s, want 202 and nothing RESTARTING", code, body)
	}
	if st, _ := w.Status("b"); st.Tasks[0].State != engine.StateFailed {
		t.Fatalf("the task was restarted without includeTasks: %+v", st)
	}
	code, body = call(t, srv, "POST", "/connectors/b/restart?includeTasks=true&onlyFailed=true", "")
	if code != 202 {
		t.Fatalf("restart = %d %s", code, body)
	}
	golden(t, "restart_failed_task", body)
}
