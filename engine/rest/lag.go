package rest

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
)

// lagScrapeTimeout bounds the backend round trips of one scrape of the
// sinks' lag: a slow or unreachable cluster makes the scrape miss the lag,
// not hang.
const lagScrapeTimeout = 5 * time.Second

// sinkLagCollector exposes, on a worker whose log is not embedded (the
// kafka backend), the lag of every sink's consumer group, under the name
// the embedded log's collector and Kafka exporters use
// (kafka_consumergroup_lag): the records of each partition the group has
// committed an offset for that it has not read yet.
type sinkLagCollector struct {
	worker *engine.Worker
	logger *slog.Logger
	lag    *prometheus.Desc
}

func newSinkLagCollector(w *engine.Worker, logger *slog.Logger) *sinkLagCollector {
	return &sinkLagCollector{
		worker: w,
		logger: logger,
		lag:    prometheus.NewDesc("kafka_consumergroup_lag", "Records a consumer group has not committed yet.", []string{"consumergroup", "topic", "partition"}, nil),
	}
}

func (c *sinkLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.lag }

func (c *sinkLagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), lagScrapeTimeout)
	defer cancel()
	b := c.worker.Backend()
	var groups []string
	for _, name := range c.worker.Connectors() {
		spec, err := c.worker.Spec(name)
		if err != nil || spec.Kind != connect.KindSink {
			continue // deleted meanwhile, or a source
		}
		group := spec.Group
		if group == "" {
			group = spec.Name
		}
		if !slices.Contains(groups, group) {
			groups = append(groups, group)
		}
	}
	ends := map[string][]engine.PartitionBounds{} // by topic, asked once per scrape
	for _, group := range groups {
		committed, err := b.GroupOffsets(ctx, group)
		if err != nil {
			c.logger.Warn("metrics: cannot read a sink group's committed offsets; its lag is left out", "group", group, "error", err)
			continue
		}
		for _, po := range committed {
			bounds, ok := ends[po.Topic]
			if !ok {
				if bounds, err = b.EndOffsets(ctx, po.Topic); err != nil {
					c.logger.Warn("metrics: cannot read a topic's end offsets; its lag is left out", "topic", po.Topic, "error", err)
				}
				ends[po.Topic] = bounds
			}
			for _, pb := range bounds {
				if pb.Partition != po.Partition {
					continue
				}
				if lag := pb.End - po.Offset; lag >= 0 && po.Offset >= 0 {
					ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(lag), group, po.Topic, strconv.Itoa(int(po.Partition)))
				}
			}
		}
	}
}
