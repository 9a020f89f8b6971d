package pipelines

import (
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/tributary-io/tributary/connect"
)

// TopicSpec returns the topic configs a pipeline file accepts under
// topics[].config and log.defaults.config. They carry Kafka's names and
// meanings. Byte sizes may be written with units (64MiB) and are handed on
// in bytes; -1 means "no limit" where Kafka allows it.
func TopicSpec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "cleanup.policy", Type: connect.TypeList, Enum: []string{"delete", "compact"}, Default: "delete",
			Description: "delete old segments by retention, compact to the last record per key, or both"},
		{Name: "retention.ms", Type: connect.TypeInt, Default: "604800000",
			Description: "how long to keep records, in milliseconds; -1 keeps them forever"},
		{Name: "retention.bytes", Type: connect.TypeSize, Default: "-1",
			Description: "the most bytes to keep per partition; -1 for no limit"},
		{Name: "segment.bytes", Type: connect.TypeSize, Default: "1073741824",
			Description: "the size at which a segment file is rolled"},
		{Name: "segment.ms", Type: connect.TypeInt, Default: "604800000",
			Description: "the age in milliseconds at which a segment file is rolled"},
		{Name: "max.message.bytes", Type: connect.TypeSize, Default: "1048588",
			Description: "the largest record batch the topic accepts"},
		{Name: "min.insync.replicas", Type: connect.TypeInt, Default: "1",
			Description: "replicas that must have a write before it is acknowledged"},
		{Name: "min.compaction.lag.ms", Type: connect.TypeInt, Default: "0",
			Description: "the least time in milliseconds a record stays uncompacted"},
		{Name: "delete.retention.ms", Type: connect.TypeInt, Default: "86400000",
			Description: "how long tombstones are kept on compacted topics, in milliseconds"},
		{Name: "compression.type", Type: connect.TypeString, Enum: []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}, Default: "producer",
			Description: "the compression of stored batches; producer keeps what the producer used"},
		{Name: "message.timestamp.type", Type: connect.TypeString, Enum: []string{"CreateTime", "LogAppendTime"}, Default: "CreateTime",
			Description: "which timestamp a record carries"},
	}}
}

// topicConfig validates topic configs and returns them with byte sizes
// converted to plain byte counts.
func (d *decoder) topicConfig(s settings, path string, missingAt *yaml.Node) map[string]string {
	spec := TopicSpec()
	unlimited := func(name, value string) bool { return name == "retention.bytes" && value == "-1" }
	d.check(spec, s, path, "topics", missingAt, unlimited)
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		p, ok := spec.Param(k)
		if !ok {
			continue
		}
		if p.Type == connect.TypeSize && !unlimited(k, v) {
			n, err := connect.ParseSize(v)
			if err != nil {
				continue
			}
			v = strconv.FormatInt(n, 10)
		}
		out[k] = v
	}
	return out
}
