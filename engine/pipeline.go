package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/pipelines"
)

// SpecsFromPipeline turns a validated pipeline into connector specs.
func SpecsFromPipeline(p *pipelines.Pipeline) []ConnectorSpec {
	var out []ConnectorSpec
	for _, s := range p.Sources {
		out = append(out, ConnectorSpec{
			Pipeline: p.Name, Name: s.Name, Kind: connect.KindSource, Connector: s.Connector,
			Config: maps.Clone(s.Config), Secrets: s.Secrets, Topic: s.Topic,
			Transforms: transformSpecs(s.Transforms), Linger: s.Linger,
		})
	}
	for _, s := range p.Sinks {
		out = append(out, ConnectorSpec{
			Pipeline: p.Name, Name: s.Name, Kind: connect.KindSink, Connector: s.Connector,
			Config: maps.Clone(s.Config), Secrets: s.Secrets, Topics: s.Topics, TopicsRegex: s.TopicsRegex, Group: s.Group,
			Transforms: transformSpecs(s.Transforms),
			Errors: ErrorPolicy{
				Tolerance: string(s.Errors.Tolerance), Retries: s.Errors.Retries,
				BackoffInitial: s.Errors.Backoff.Initial, BackoffMax: s.Errors.Backoff.Max,
				DeadLetterTopic: s.Errors.DeadLetter.Topic,
			},
		})
	}
	return out
}

// transformSpecs turns a pipeline's transform chain into specs, with the
// loader's secrets (the keys of secret parameters and of values from the
// environment), so that they are masked wherever the spec is shown.
func transformSpecs(ts []pipelines.Transform) []TransformSpec {
	var out []TransformSpec
	for _, t := range ts {
		out = append(out, TransformSpec{Type: t.Type, Config: maps.Clone(t.Config), Secrets: slices.Clone(t.Secrets)})
	}
	return out
}

// StartPipeline creates the pipeline's topics and starts its connectors. A
// declared topic that exists is used as it is: where it differs from the
// declaration (partitions, configs), a warning is logged and shown in the
// status of the pipeline's connectors.
func (w *Worker) StartPipeline(ctx context.Context, p *pipelines.Pipeline) error {
	for _, s := range p.Sources {
		if s.Tasks > 1 {
			return fmt.Errorf("pipeline %s: source %s asks for %d tasks; this worker runs one task per connector (set tasks: 1)", p.Name, s.Name, s.Tasks)
		}
	}
	for _, s := range p.Sinks {
		if s.Tasks > 1 {
			return fmt.Errorf("pipeline %s: sink %s asks for %d tasks; this worker runs one task per connector (set tasks: 1, or run several workers on the kafka backend)", p.Name, s.Name, s.Tasks)
		}
	}
	var drift []string
	for _, t := range p.Topics {
		d, err := w.ensureDeclaredTopic(ctx, p.Name, t.Name, t.Partitions, t.Config)
		if err != nil {
			return fmt.Errorf("pipeline %s: topic %s: %w", p.Name, t.Name, err)
		}
		drift = append(drift, d...)
	}
	w.setTopicWarnings(p.Name, drift)
	for _, spec := range SpecsFromPipeline(p) {
		if spec.Kind == connect.KindSource && !hasPlaceholder(spec.Topic) {
			if err := w.opts.Backend.EnsureTopic(ctx, spec.Topic, p.Log.Defaults.Partitions, p.Log.Defaults.Config); err != nil {
				return fmt.Errorf("pipeline %s: topic %s: %w", p.Name, spec.Topic, err)
			}
		}
		if err := w.Start(ctx, spec, StateRunning); err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
	}
	return nil
}

func hasPlaceholder(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '{' {
			return true
		}
	}
	return false
}
