package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// tableSource names its records' topics itself from a "topic" template, as
// the CDC sources do (one topic per table).
type tableSource struct {
	topic string
	sent  bool
}

func (s *tableSource) Open(ctx context.Context, cfg connect.Config) error {
	var err error
	s.topic, err = cfg.String("topic")
	return err
}

func (s *tableSource) Read(ctx context.Context) ([]connect.Record, error) {
	if s.sent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.sent = true
	var out []connect.Record
	for _, table := range []string{"customers", "orders"} {
		topic := strings.NewReplacer("{prefix}", "db", "{table}", table).Replace(s.topic)
		out = append(out, connect.Record{Topic: topic, Key: []byte(table), Value: []byte(`{"table":"` + table + `"}`)})
	}
	return out, nil
}

func (s *tableSource) Ack(context.Context, connect.Position) error { return nil }
func (s *tableSource) Close(context.Context) error                 { return nil }

func registerTableSource(h *harness) {
	h.worker.Registry().MustRegister(connect.Connector{Name: "tables", Kind: connect.KindSource, Version: "test",
		Spec: connect.Spec{Params: []connect.Param{{Name: "topic", Type: connect.TypeString, Default: "{prefix}.{table}",
			Description: "topic template"}}},
		NewSource: func() connect.Source { return &tableSource{} }})
}

// The pipeline's `topic: cdc.{table}` on a source whose connector has its
// own topic template is that template: records go where the pipeline (and
// so validate and the sinks) expects, not to the connector's default.
func TestWorker_SourceTopicIsTheConnectorsTemplate(t *testing.T) {
	h := newHarness(t, t.TempDir())
	registerTableSource(h)
	ctx := t.Context()
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "tables", Topic: "cdc.{table}"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"cdc.customers", "cdc.orders"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both tables' records at the sink", func() bool { return len(h.received()) >= 2 })
	for _, r := range h.received() {
		if !strings.HasPrefix(r.Topic, "cdc.") {
			t.Fatalf("record went to %s, want cdc.<table>", r.Topic)
		}
	}
	for _, name := range []string{"db.customers", "db.orders"} {
		if _, err := h.log.Partitions(name); err == nil {
			t.Fatalf("topic %s exists: the connector's default template was used", name)
		}
	}
}

func TestWorker_SourceTopicAndConfigTopicMustAgree(t *testing.T) {
	h := newHarness(t, t.TempDir())
	registerTableSource(h)
	err := h.worker.Start(t.Context(), ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "tables",
		Topic: "cdc.{table}", Config: map[string]string{"topic": "other.{table}"}}, "")
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("Start = %v, want a bad request naming the disagreement", err)
	}
	// The same value in both places, or only in config, is fine.
	if err := h.worker.Start(t.Context(), ConnectorSpec{Name: "same", Kind: connect.KindSource, Connector: "tables",
		Topic: "cdc.{table}", Config: map[string]string{"topic": "cdc.{table}"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(t.Context(), ConnectorSpec{Name: "only-config", Kind: connect.KindSource, Connector: "tables",
		Config: map[string]string{"topic": "x.{table}"}}, ""); err != nil {
		t.Fatal(err)
	}
	if spec, err := h.worker.Spec("only-config"); err != nil || spec.Topic != "x.{table}" {
		t.Fatalf("Spec = %+v, %v; want the config's topic as the source's", spec, err)
	}
}
