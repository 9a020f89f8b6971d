package engine

import (
	"time"

	"github.com/tributary-io/tributary/connect"
)

// State is a connector's or task's state, as Kafka Connect names them.
type State string

// States.
const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateStopped    State = "STOPPED"
	StateFailed     State = "FAILED"
	StateRestarting State = "RESTARTING"
)

// TaskStatus is the status of one task.
type TaskStatus struct {
	ID       int
	State    State
	WorkerID string
	Trace    string // the error that failed the task, when FAILED
	// Report is what the connector says about its progress and warnings
	// (connect.Reporter); nil when it says nothing.
	Report *connect.Report
}

// ConnectorStatus is the status of a connector and its tasks.
type ConnectorStatus struct {
	Name     string
	Type     connect.Kind
	State    State
	WorkerID string
	Trace    string
	Tasks    []TaskStatus
}

// ConnectorInfo is a connector's configuration as the REST API shows it:
// every value a string, secrets masked.
type ConnectorInfo struct {
	Name   string
	Type   connect.Kind
	Config map[string]string
	Tasks  []int
}

// TransformSpec is one transform of a connector's chain.
type TransformSpec struct {
	// Name is the alias the user gave the transform (Kafka Connect's
	// transforms=<alias>,…), kept so that the config reads back as it was
	// written; empty when none was given (a pipeline file), and the REST
	// API then names it after its type.
	Name   string
	Type   string
	Config map[string]string
	// Secrets names the Config keys whose values are never shown, as
	// ConnectorSpec.Secrets: those of secret parameters and those that
	// came from the environment.
	Secrets []string
}

// ErrorPolicy says how a sink handles failing records.
type ErrorPolicy struct {
	// Tolerance is "none" (the task fails) or "all" (the record goes to the
	// dead-letter topic, or is skipped when there is none).
	Tolerance string
	// Retries of a failing write before the tolerance applies; -1 retries
	// without limit.
	Retries         int
	BackoffInitial  time.Duration
	BackoffMax      time.Duration
	DeadLetterTopic string
}

// ConnectorSpec says what one connector instance runs.
type ConnectorSpec struct {
	Pipeline  string
	Name      string
	Kind      connect.Kind
	Connector string // the connector type, e.g. "generator"
	Config    map[string]string
	Secrets   []string // Config keys whose values are never shown
	Topic     string   // sources: where records go (may hold {placeholders})
	Topics    []string // sinks: what they read
	// TopicsRegex selects a sink's topics by a Go regular expression that
	// must match the whole name; matched when the task starts.
	TopicsRegex string
	Group       string // sinks: consumer group; default Name
	Transforms  []TransformSpec
	Errors      ErrorPolicy
	// Linger is how long a source holds the records it reads while its
	// previous append is in flight (written, not yet durable), to append
	// them together once it is durable: fewer appends and log fsyncs for
	// some latency (Kafka Connect's producer.override.linger.ms). 0, the
	// default, appends each read at once. Sinks ignore it.
	Linger time.Duration
}
