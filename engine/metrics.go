package engine

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/connect"
)

// Metrics are the worker's Prometheus metrics. Names follow the Kafka
// Connect and exporter conventions people already graph (CONVENTIONS.md §7).
type Metrics struct {
	Registry       *prometheus.Registry
	recordsRead    *prometheus.CounterVec
	recordsWritten *prometheus.CounterVec
	errors         *prometheus.CounterVec
	deadLettered   *prometheus.CounterVec
	taskFailures   *prometheus.CounterVec
	batchSeconds   *prometheus.HistogramVec
	deliverySecs   *prometheus.HistogramVec
	status         *prometheus.GaugeVec
	taskStatus     *prometheus.GaugeVec
}

// NewMetrics registers the worker's metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		recordsRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_connector_records_read_total",
			Help: "Records a task took in: read from the source, or polled from the log for a sink.",
		}, []string{"connector"}),
		recordsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_connector_records_written_total",
			Help: "Records a task put out: appended to the log by a source, or delivered by a sink.",
		}, []string{"connector"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_connector_errors_total",
			Help: "Errors by stage (read, transform, write).",
		}, []string{"connector", "stage"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_connector_deadlettered_records_total",
			Help: "Records sent to the dead-letter topic (or skipped without one).",
		}, []string{"connector"}),
		taskFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_connector_task_failures_total",
			Help: "Times a task failed and was restarted.",
		}, []string{"connector"}),
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_connector_batch_seconds",
			Help:    "Time to process one batch (transform, append or write, commit).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"connector"}),
		deliverySecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_sink_delivery_latency_seconds",
			Help:    "Time from a record's timestamp to its delivery by a sink.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"connector"}),
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kafka_connect_connector_status",
			Help: "1 for the connector's current state (RUNNING, PAUSED or STOPPED, as GET /connectors/{name}/status shows it).",
		}, []string{"connector", "status"}),
		taskStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kafka_connect_connector_task_status",
			Help: "1 for the connector task's current state (UNASSIGNED, RUNNING, PAUSED, FAILED or RESTARTING).",
		}, []string{"connector", "task", "status"}),
	}
	m.Registry.MustRegister(m.recordsRead, m.recordsWritten, m.errors, m.deadLettered, m.taskFailures, m.batchSeconds, m.deliverySecs, m.status, m.taskStatus)
	return m
}

var allStates = [...]State{StateUnassigned, StateRunning, StatePaused, StateStopped, StateFailed, StateRestarting}

// connectorMetrics are the series of one connector, looked up once: a
// lookup by label values hashes them and takes the vector's lock, too
// much for every batch.
type connectorMetrics struct {
	recordsRead    prometheus.Counter
	recordsWritten prometheus.Counter
	batchSeconds   prometheus.Observer
	status         [len(allStates)]prometheus.Gauge // of the connector, in the order of allStates
	taskStatus     [len(allStates)]prometheus.Gauge // of its task

	// Created on first use, so that a source shows no delivery latency.
	deliveryOnce sync.Once
	deliverySecs prometheus.Observer
	m            *Metrics
	connector    string
}

// forConnector returns the series of a connector. Its records counters
// and batch histogram exist from then on (at 0), as its status does.
func (m *Metrics) forConnector(connector string) *connectorMetrics {
	cm := &connectorMetrics{
		recordsRead:    m.recordsRead.WithLabelValues(connector),
		recordsWritten: m.recordsWritten.WithLabelValues(connector),
		batchSeconds:   m.batchSeconds.WithLabelValues(connector),
		m:              m,
		connector:      connector,
	}
	for i, st := range allStates {
		cm.status[i] = m.status.WithLabelValues(connector, string(st))
		cm.taskStatus[i] = m.taskStatus.WithLabelValues(connector, "0", string(st))
	}
	return cm
}

// setStatus sets the connector's and its task's state series: the
// connector shows its target (RUNNING, PAUSED, STOPPED), as the REST
// status does; the task its own state, UNASSIGNED while stopped.
func (cm *connectorMetrics) setStatus(target, task State) {
	if target != StatePaused && target != StateStopped {
		target = StateRunning
	}
	if task == StateStopped {
		task = StateUnassigned
	}
	for i, st := range allStates {
		cm.status[i].Set(b2f(st == target))
		cm.taskStatus[i].Set(b2f(st == task))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (cm *connectorMetrics) observeDelivery(recs []connect.Record) {
	cm.deliveryOnce.Do(func() { cm.deliverySecs = cm.m.deliverySecs.WithLabelValues(cm.connector) })
	now := time.Now()
	h := cm.deliverySecs
	for i := range recs {
		if ts := recs[i].Timestamp; !ts.IsZero() {
			h.Observe(now.Sub(ts).Seconds())
		}
	}
}

// reportCollector exports what connectors report (connect.Reporter) as
// gauges: progress per unit of work and the connector's own readings. It
// is an unchecked collector: the gauges come and go with the connectors.
type reportCollector struct{ w *Worker }

var (
	progressDone  = prometheus.NewDesc("tributary_connector_progress_done", "Work done of one unit a connector reports (e.g. rows of a table snapshot).", []string{"connector", "name", "unit"}, nil)
	progressTotal = prometheus.NewDesc("tributary_connector_progress_total", "Estimated size of that unit of work; 0 when unknown.", []string{"connector", "name", "unit"}, nil)
	warningsDesc  = prometheus.NewDesc("tributary_connector_warnings", "Warnings a connector reports now.", []string{"connector"}, nil)
)

func (reportCollector) Describe(chan<- *prometheus.Desc) {}

func (c reportCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.w.Connectors() {
		r, err := c.w.runner(name)
		if err != nil {
			continue
		}
		rep := r.report()
		if rep == nil {
			continue
		}
		for _, p := range rep.Progress {
			ch <- prometheus.MustNewConstMetric(progressDone, prometheus.GaugeValue, float64(p.Done), name, p.Name, p.Unit)
			ch <- prometheus.MustNewConstMetric(progressTotal, prometheus.GaugeValue, float64(p.Total), name, p.Name, p.Unit)
		}
		ch <- prometheus.MustNewConstMetric(warningsDesc, prometheus.GaugeValue, float64(len(rep.Warnings)), name)
		for g, v := range rep.Gauges {
			if !validMetricName(g) {
				continue
			}
			d := prometheus.NewDesc("tributary_connector_"+g, "Reported by the connector.", []string{"connector"}, nil)
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
	}
}

func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
