package connect

// Reporter is implemented by a connector that has progress or warnings to
// show beside its task's status: a snapshot's rows done per table, WAL a
// replication slot holds back, a backlog. The worker calls Report from its
// own goroutine, concurrently with Read/Write and Ack, whenever it builds a
// status or serves /metrics, so Report must be cheap and safe for
// concurrent use.
type Reporter interface {
	Report() Report
}

// Report is what a connector reports about itself. It is plain data, so it
// crosses a process boundary.
type Report struct {
	// Phase names what the connector is doing, e.g. "snapshot",
	// "streaming"; empty when there is nothing to say.
	Phase string `json:"phase,omitempty"`
	// Progress is one entry per unit of work with a known size, e.g. one
	// per table of a snapshot.
	Progress []Progress `json:"progress,omitempty"`
	// Warnings are conditions a user should act on, each one sentence
	// saying what and what to do.
	Warnings []string `json:"warnings,omitempty"`
	// Gauges are numeric readings exported on /metrics as
	// tributary_connector_<name>{connector="…"}; names use [a-z0-9_].
	Gauges map[string]float64 `json:"gauges,omitempty"`
}

// Progress is how far one unit of work has come.
type Progress struct {
	Name  string `json:"name"`  // e.g. "public.orders"
	Done  int64  `json:"done"`  // e.g. rows read
	Total int64  `json:"total"` // an estimate; 0 when unknown
	Unit  string `json:"unit"`  // e.g. "rows"
}
