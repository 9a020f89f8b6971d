package pipelines

import (
	"maps"
	"slices"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Pipeline is one validated pipeline file with its defaults applied.
//
// Config maps hold the values as written (after ${VAR} expansion), converted
// to strings as Kafka Connect's configs are; connector defaults are not
// filled in (use connect.Spec.WithDefaults). A Pipeline holds secrets in
// clear: show only Masked() in logs, status and the REST API.
type Pipeline struct {
	Name    string   // the pipeline's name; defaults to the file name without extension
	File    string   // the file it was loaded from, as given to the loader
	Log     Log      // the log the pipeline reads and writes
	Topics  []Topic  // topics to create, in file order
	Sources []Source // in file order
	Sinks   []Sink   // in file order
	Plugins Plugins  // where plugin connectors are found
}

// Backend names a log implementation.
type Backend string

// Log backends.
const (
	BackendEmbedded Backend = "embedded" // the built-in log, in process
	BackendKafka    Backend = "kafka"    // a Kafka-API cluster
)

// Log configures the log backend.
type Log struct {
	Backend  Backend       // default BackendEmbedded
	Dir      string        // data directory of the embedded log; default "./data"
	Kafka    Kafka         // used when Backend is BackendKafka
	Defaults TopicDefaults // applied to topics that do not set their own
}

// Kafka configures the kafka backend, or the Kafka listener of the
// embedded log. TLS and SASL are the client's settings with the kafka
// backend and the listener's with the embedded log.
type Kafka struct {
	Brokers []string // host:port seed brokers; required for BackendKafka
	// Listen is where the embedded log serves the Kafka wire protocol
	// (kcat, librdkafka, franz-go, Java clients); empty: off.
	Listen string
	// NoAutoCreateTopics makes the listener answer a client's metadata
	// request for an unknown topic with UNKNOWN_TOPIC_OR_PARTITION instead
	// of creating it (log.kafka.auto_create_topics: false, Kafka's
	// auto.create.topics.enable). Sources of the pipelines still create
	// their topics.
	NoAutoCreateTopics bool
	// SessionTimeout is the kafka backend's consumer-group session
	// timeout (log.kafka.session_timeout, Kafka's session.timeout.ms): how
	// long a worker that died keeps its sinks' partitions and its sources'
	// leases. 0: the client's default (45 s).
	SessionTimeout time.Duration
	TLS            *KafkaTLS  // nil: plaintext
	SASL           *KafkaSASL // nil: no authentication
}

// KafkaTLS is log.kafka.tls. With the kafka backend: CA verifies the
// brokers (default: the system's roots), Cert and Key are the client's
// certificate for mutual TLS, ServerName overrides the name checked. With
// the listener: Cert and Key (required) are the listener's, and CA, when
// set, makes it require and verify client certificates.
type KafkaTLS struct {
	CA, Cert, Key, ServerName string // file paths, but ServerName
}

// KafkaSASL is log.kafka.sasl. With the kafka backend: Mechanism (PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512), Username and Password (secret). With the
// listener: Users, user name → password (secret), accepted through every
// mechanism of Mechanisms (default all three).
type KafkaSASL struct {
	Mechanism, Username, Password string
	Mechanisms                    []string
	Users                         map[string]string
}

// SASL mechanisms, as Kafka names them.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// TopicDefaults apply to the topics of this pipeline: those listed under
// topics: that leave a setting out, and those created on first use.
type TopicDefaults struct {
	Partitions int               // default 1
	Config     map[string]string // topic configs (Kafka names), sizes in bytes
}

// Topic is a topic the pipeline creates if it does not exist.
type Topic struct {
	Name       string
	Partitions int               // Log.Defaults.Partitions when not set
	Config     map[string]string // Log.Defaults.Config overlaid with the topic's own; sizes in bytes
	Pos        Pos               // where the entry starts
}

// Source is one source connector instance.
type Source struct {
	Name      string // unique among the sources and sinks of all loaded pipelines
	Connector string // the connector type, a name in the catalog
	// Topic is where records go. It may be a template holding "{...}"
	// placeholders that the connector fills in per record.
	Topic      string
	Tasks      int // the most tasks to run; default 1
	Config     map[string]string
	Transforms []Transform // applied in order before records are appended
	// Linger is how long records read while the previous append is in
	// flight (written, not yet durable) are held to be appended together
	// once it is durable: fewer appends and log fsyncs, for up to Linger
	// more latency. 0 (the default) appends each read at once.
	Linger time.Duration
	// Secrets names the Config keys whose values must never be shown: those
	// of secret parameters and those that came from the environment.
	Secrets []string
	Pos     Pos // where the entry starts
}

// MaskedConfig returns a copy of Config with secret values replaced by
// connect.Masked.
func (s Source) MaskedConfig() map[string]string { return maskConfig(s.Config, s.Secrets) }

// Sink is one sink connector instance.
type Sink struct {
	Name      string // unique among the sources and sinks of all loaded pipelines
	Connector string // the connector type, a name in the catalog
	// Topics to read. Exactly one of Topics and TopicsRegex is set.
	Topics []string
	// TopicsRegex selects the topics to read by a Go regular expression
	// matched against the whole topic name.
	TopicsRegex string
	Group       string // consumer group; defaults to Name
	Tasks       int    // the most tasks to run; default 1
	Config      map[string]string
	Transforms  []Transform // applied in order before Write
	Errors      ErrorPolicy
	Secrets     []string // as Source.Secrets
	Pos         Pos      // where the entry starts
}

// MaskedConfig returns a copy of Config with secret values replaced by
// connect.Masked.
func (s Sink) MaskedConfig() map[string]string { return maskConfig(s.Config, s.Secrets) }

// Transform is one step of a transform chain. In the file it is a mapping
// whose key "type" names the transform and whose other keys are its Config.
type Transform struct {
	Type    string // the transform type, a name in the catalog
	Config  map[string]string
	Secrets []string // as Source.Secrets
	Pos     Pos      // where the entry starts
}

// MaskedConfig returns a copy of Config with secret values replaced by
// connect.Masked.
func (t Transform) MaskedConfig() map[string]string { return maskConfig(t.Config, t.Secrets) }

// Tolerance says what a sink does with a record that still fails after its
// retries.
type Tolerance string

// Error tolerances, as Kafka Connect's errors.tolerance.
const (
	ToleranceNone Tolerance = "none" // the task fails (default)
	ToleranceAll  Tolerance = "all"  // the record is skipped, or sent to the dead-letter topic
)

// Defaults of ErrorPolicy.
const (
	DefaultRetries        = 10
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 10 * time.Second
)

// ErrorPolicy says how a sink handles records that fail.
type ErrorPolicy struct {
	Tolerance Tolerance // default ToleranceNone
	// Retries is how often a failed attempt is retried before Tolerance
	// applies: 0 never retries, -1 retries without limit. Default 10.
	Retries    int
	Backoff    Backoff
	DeadLetter DeadLetter // only with ToleranceAll
}

// Backoff is an exponential backoff between retries: the first wait is
// Initial, each next one doubles, up to Max. The engine adds jitter.
type Backoff struct {
	Initial time.Duration // default 100ms
	Max     time.Duration // default 10s
}

// DeadLetter names where records go that fail with ToleranceAll. An empty
// Topic drops them (after logging), as Kafka Connect does without a DLQ.
type DeadLetter struct {
	Topic string
}

// Plugins says where plugin connectors are found and which plugin files
// may run.
type Plugins struct {
	Dirs []string // directories holding plugin executables
	// SHA256 pins plugin files, by file name (e.g. "counter"), to the
	// sha256 they must have: 64 lowercase hex digits. A pinned file whose
	// sum differs is not started. The pins of the files loaded together
	// agree: a file pinned twice is pinned to the same sum.
	SHA256 map[string]string
	// CallTimeout is the deadline of every call to a plugin (plugins.
	// call_timeout): a plugin that has not answered by then is deemed
	// hung and killed. 0: the host's default (30 s). The files loaded
	// together agree on it.
	CallTimeout time.Duration
}

// Masked returns a deep copy of p in which every secret connector and
// transform setting is replaced by connect.Masked. It is the form to show in
// logs, status and REST answers.
func (p *Pipeline) Masked() *Pipeline {
	if p == nil {
		return nil
	}
	q := *p
	q.Log.Kafka.Brokers = slices.Clone(p.Log.Kafka.Brokers)
	q.Log.Defaults.Config = maps.Clone(p.Log.Defaults.Config)
	q.Plugins.Dirs = slices.Clone(p.Plugins.Dirs)
	q.Plugins.SHA256 = maps.Clone(p.Plugins.SHA256)
	q.Topics = make([]Topic, len(p.Topics))
	for i, t := range p.Topics {
		t.Config = maps.Clone(t.Config)
		q.Topics[i] = t
	}
	q.Sources = make([]Source, len(p.Sources))
	for i, s := range p.Sources {
		s.Config = s.MaskedConfig()
		s.Transforms = maskTransforms(s.Transforms)
		s.Secrets = slices.Clone(s.Secrets)
		q.Sources[i] = s
	}
	q.Sinks = make([]Sink, len(p.Sinks))
	for i, s := range p.Sinks {
		s.Topics = slices.Clone(s.Topics)
		s.Config = s.MaskedConfig()
		s.Transforms = maskTransforms(s.Transforms)
		s.Secrets = slices.Clone(s.Secrets)
		q.Sinks[i] = s
	}
	return &q
}

func maskTransforms(ts []Transform) []Transform {
	if ts == nil {
		return nil
	}
	out := make([]Transform, len(ts))
	for i, t := range ts {
		t.Config = t.MaskedConfig()
		t.Secrets = slices.Clone(t.Secrets)
		out[i] = t
	}
	return out
}

func maskConfig(cfg map[string]string, secrets []string) map[string]string {
	if cfg == nil {
		return nil
	}
	out := maps.Clone(cfg)
	for _, k := range secrets {
		if v, ok := out[k]; ok && v != "" {
			out[k] = connect.Masked
		}
	}
	return out
}
