package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/kafkabackend"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
)

// countingSink takes every record it is given and counts them.
type countingSink struct{ n *int64 }

func (countingSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s countingSink) Write(ctx context.Context, recs []connect.Record) error {
	*s.n += int64(len(recs))
	return nil
}
func (countingSink) Close(ctx context.Context) error { return nil }

// kafkaListener opens a log with the given topics (one partition each)
// and serves it through the Kafka listener, for workers on the kafka
// backend; it returns the log and the listener's address.
func kafkaListener(t *testing.T, topics ...string) (*tlog.Log, string) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ln, err := kafka.Listen(t.Context(), "127.0.0.1:0", l, kafka.Options{Logger: logger, InitialRebalanceDelay: -1, GroupMinSessionTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	for _, topic := range topics {
		if err := l.CreateTopic(topic, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	return l, ln.Addr().String()
}

// TestREST_KafkaBackend_ClusterIDAndLag: on a worker whose log is a Kafka
// cluster (here the built-in listener), GET / names the cluster's id, and
// /metrics has the sinks' groups' lag (kafka_consumergroup_lag), as it has
// with the embedded log.
func TestREST_KafkaBackend_ClusterIDAndLag(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	l, addr := kafkaListener(t)
	kb, err := kafkabackend.New(t.Context(), kafkabackend.Options{Brokers: []string{addr}, Logger: logger,
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Close() })

	var written int64
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "count", Kind: connect.KindSink, Version: "1.0.0", NewSink: func() connect.Sink { return countingSink{&written} }})
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: kb, Connectors: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	srv := httptest.NewServer(New(w, nil, "test", logger))
	t.Cleanup(srv.Close)

	if code, body := call(t, srv, "GET", "/", ""); code != 200 || !strings.Contains(body, `"kafka_cluster_id":"`+l.ClusterID()+`"`) {
		t.Fatalf("GET / = %d %s, want the cluster's id %q", code, body, l.ClusterID())
	}

	// Ten records in, read and committed by the sink: lag 0; then the
	// sink paused and five more: lag 5.
	if err := l.CreateTopic("events", 1, nil); err != nil {
		t.Fatal(err)
	}
	produce := func(n int) {
		recs := make([]tlog.Record, n)
		for i := range recs {
			recs[i].Value = fmt.Appendf(nil, "%d", i)
		}
		if _, err := l.Append(t.Context(), "events", 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	produce(10)
	if code, body := call(t, srv, "POST", "/connectors", `{"name":"counter","config":{"connector.class":"count","topics":"events"}}`); code != 201 {
		t.Fatalf("create the sink: %d %s", code, body)
	}
	lagLine := `kafka_consumergroup_lag{consumergroup="counter",partition="0",topic="events"}`
	waitMetric := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, body := call(t, srv, "GET", "/metrics", "")
			if strings.Contains(body, lagLine+" "+want+"\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never showed %s %s; lag lines now:\n%s", lagLine, want, grepLines(body, "kafka_consumergroup_lag"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitMetric("0")
	if code, body := call(t, srv, "PUT", "/connectors/counter/pause", ""); code != 202 {
		t.Fatalf("pause: %d %s", code, body)
	}
	produce(5)
	waitMetric("5")
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestREST_HealthWhileStarting: GET /health answers 503 "starting" until
// the worker has started its pipelines, then 200 "healthy" (Kafka
// Connect's KIP-1017 bodies).
func TestREST_HealthWhileStarting(t *testing.T) {
	_, w, _ := newTestServer(t)
	api := New(w, nil, "test", slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	api.SetStarting(true)
	if code, body := call(t, srv, "GET", "/health", ""); code != 503 || body != `{"message":"Worker is still starting up.","status":"starting"}`+"\n" {
		t.Fatalf("GET /health while starting = %d %s", code, body)
	}
	api.SetStarting(false)
	if code, body := call(t, srv, "GET", "/health", ""); code != 200 || !strings.Contains(body, `"status":"healthy"`) {
		t.Fatalf("GET /health once started = %d %s", code, body)
	}
}

// TestREST_NoConnectorsIsAnEmptyList: GET /connectors on a worker running
// nothing answers [], as Kafka Connect does, not null.
func TestREST_NoConnectorsIsAnEmptyList(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "GET", "/connectors", ""); code != 200 || body != "[]\n" {
		t.Fatalf("GET /connectors with none = %d %q, want 200 []", code, body)
	}
}
