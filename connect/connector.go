package connect

import (
	"errors"
	"fmt"
)

// Kind says whether a connector is a source or a sink.
type Kind string

// The kinds of connectors, as Kafka Connect's REST API spells them.
const (
	KindSource Kind = "source"
	KindSink   Kind = "sink"
)

// Connector describes a connector plugin, built in or loaded over gRPC: what
// it is called, what it accepts, and how to make instances of it. The
// worker makes one instance per task.
type Connector struct {
	// Name is what pipelines use in "connector:", e.g. "postgres", "file".
	Name string
	// Kind is KindSource or KindSink.
	Kind Kind
	// Version is the connector's version.
	Version string
	// Description says in one sentence what the connector does.
	Description string
	// Spec lists the configuration parameters.
	Spec Spec

	// NewSource makes a source instance; set for sources only.
	NewSource func() Source
	// NewSink makes a sink instance; set for sinks only.
	NewSink func() Sink
}

// validate reports what is wrong with a connector description.
func (c Connector) validate() error {
	if c.Name == "" {
		return errors.New("connector has no name")
	}
	switch c.Kind {
	case KindSource:
		if c.NewSource == nil || c.NewSink != nil {
			return fmt.Errorf("source connector %q: set NewSource, and only NewSource", c.Name)
		}
	case KindSink:
		if c.NewSink == nil || c.NewSource != nil {
			return fmt.Errorf("sink connector %q: set NewSink, and only NewSink", c.Name)
		}
	default:
		return fmt.Errorf("connector %q: kind %q is neither %q nor %q", c.Name, c.Kind, KindSource, KindSink)
	}
	seen := make(map[string]bool, len(c.Spec.Params))
	for _, p := range c.Spec.Params {
		if p.Name == "" {
			return fmt.Errorf("%s connector %q: a parameter has no name", c.Kind, c.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("%s connector %q: parameter %q is declared twice", c.Kind, c.Name, p.Name)
		}
		seen[p.Name] = true
		if p.Default != "" {
			if err := p.Check(p.Default); err != nil {
				return fmt.Errorf("%s connector %q: default of %q: %w", c.Kind, c.Name, p.Name, err)
			}
		}
	}
	return nil
}
