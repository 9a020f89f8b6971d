package log

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Topic config names, as Kafka spells them.
const (
	ConfigCleanupPolicy     = "cleanup.policy"
	ConfigRetentionMs       = "retention.ms"
	ConfigRetentionBytes    = "retention.bytes"
	ConfigSegmentBytes      = "segment.bytes"
	ConfigSegmentMs         = "segment.ms"
	ConfigDeleteRetentionMs = "delete.retention.ms"
	ConfigMaxMessageBytes   = "max.message.bytes"
	ConfigCompressionType   = "compression.type"
	ConfigMinInsyncReplicas = "min.insync.replicas"
	ConfigMinCleanableRatio = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLag  = "min.compaction.lag.ms"
	ConfigTimestampType     = "message.timestamp.type"
)

// configDef describes one topic config: its Kafka default and how a value is
// checked.
type configDef struct {
	def   string
	check func(v string) error
	doc   string
}

var configDefs = map[string]configDef{
	ConfigCleanupPolicy:     {"delete", policyList, "delete old segments, compact by key, or both"},
	ConfigRetentionMs:       {"604800000", intAtLeast(-1), "how long to keep a segment after its newest record, in ms; -1 keeps forever"},
	ConfigRetentionBytes:    {"-1", intAtLeast(-1), "largest size of one partition before old segments go; -1 means no limit"},
	ConfigSegmentBytes:      {"1073741824", intBetween(14, math.MaxInt32), "size at which a new segment file is started"},
	ConfigSegmentMs:         {"604800000", intAtLeast(1), "age at which a new segment file is started, in ms"},
	ConfigDeleteRetentionMs: {"86400000", intAtLeast(0), "how long tombstones stay in a compacted topic once the cleaner has seen them, in ms"},
	ConfigMaxMessageBytes:   {"1048588", intBetween(0, math.MaxInt32), "largest record batch the topic accepts, in bytes"},
	ConfigCompressionType:   {"producer", oneOf("producer", "none", "uncompressed", "gzip", "snappy", "lz4", "zstd"), "codec of stored batches; producer keeps what the producer chose"},
	ConfigMinInsyncReplicas: {"1", intAtLeast(1), "replicas that must have a write before it is acknowledged (one node: 1)"},
	ConfigMinCleanableRatio: {"0.5", floatBetween(0, 1), "share of a compacted log that must be dirty before it is cleaned"},
	ConfigMinCompactionLag:  {"0", intAtLeast(0), "how long a record stays uncompacted after its timestamp, in ms"},
	ConfigTimestampType:     {"CreateTime", oneOf("CreateTime", "LogAppendTime"), "which timestamp records keep"},
}

// ConfigNames returns the names of every topic config, sorted.
func ConfigNames() []string {
	names := make([]string, 0, len(configDefs))
	for n := range configDefs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ConfigDefault returns the default value of a topic config.
func ConfigDefault(name string) (string, bool) {
	d, ok := configDefs[name]
	return d.def, ok
}

// ConfigDoc returns one line describing a topic config.
func ConfigDoc(name string) string { return configDefs[name].doc }

// ValidateConfig checks topic config overrides: every name must be known and
// every value valid. The error lists every problem and the valid names.
func ValidateConfig(cfg map[string]string) error {
	var problems []string
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, ok := configDefs[n]
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown topic config %q (valid: %s)", n, strings.Join(ConfigNames(), ", ")))
			continue
		}
		if err := d.check(cfg[n]); err != nil {
			problems = append(problems, fmt.Sprintf("%s=%s: %v", n, cfg[n], err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// TopicConfig is the effective, parsed configuration of a topic.
type TopicConfig struct {
	Delete            bool // cleanup.policy contains delete
	Compact           bool // cleanup.policy contains compact
	RetentionMs       int64
	RetentionBytes    int64
	SegmentBytes      int64
	SegmentMs         int64
	DeleteRetentionMs int64
	MaxMessageBytes   int64
	Compression       string // producer, none, gzip, snappy, lz4, zstd
	LogAppendTime     bool
	MinCleanableRatio float64
	MinCompactionLag  int64 // ms: segments holding a newer record are not cleaned yet
}

// parseTopicConfig resolves overrides on top of base (the log's defaults,
// themselves on top of Kafka's) into a TopicConfig. Values must have been
// validated.
func parseTopicConfig(base, overrides map[string]string) TopicConfig {
	get := func(n string) string {
		if v, ok := overrides[n]; ok {
			return v
		}
		if v, ok := base[n]; ok {
			return v
		}
		return configDefs[n].def
	}
	i64 := func(n string) int64 {
		v, _ := strconv.ParseInt(get(n), 10, 64)
		return v
	}
	policy := get(ConfigCleanupPolicy)
	comp := get(ConfigCompressionType)
	if comp == "uncompressed" {
		comp = "none"
	}
	ratio, _ := strconv.ParseFloat(get(ConfigMinCleanableRatio), 64)
	return TopicConfig{
		Delete:            strings.Contains(policy, "delete"),
		Compact:           strings.Contains(policy, "compact"),
		RetentionMs:       i64(ConfigRetentionMs),
		RetentionBytes:    i64(ConfigRetentionBytes),
		SegmentBytes:      i64(ConfigSegmentBytes),
		SegmentMs:         i64(ConfigSegmentMs),
		DeleteRetentionMs: i64(ConfigDeleteRetentionMs),
		MaxMessageBytes:   i64(ConfigMaxMessageBytes),
		Compression:       comp,
		LogAppendTime:     get(ConfigTimestampType) == "LogAppendTime",
		MinCleanableRatio: ratio,
		MinCompactionLag:  i64(ConfigMinCompactionLag),
	}
}

// policyList checks cleanup.policy, a list as Kafka's: delete, compact or
// both, comma-separated, spaces around the items allowed.
func policyList(v string) error {
	seen := map[string]bool{}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if (item != "delete" && item != "compact") || seen[item] {
			return fmt.Errorf("must be one of delete, compact, or both comma-separated (compact,delete)")
		}
		seen[item] = true
	}
	return nil
}

func oneOf(valid ...string) func(string) error {
	return func(v string) error {
		for _, s := range valid {
			if v == s {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(valid, ", "))
	}
}

func intAtLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("must be an integer")
		}
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

func intBetween(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer between %d and %d", lo, hi)
		}
		return nil
	}
}

func floatBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < lo || f > hi {
			return fmt.Errorf("must be a number between %g and %g", lo, hi)
		}
		return nil
	}
}

// msDuration converts a config's milliseconds to a time.Duration,
// saturating: Kafka accepts up to Long.MAX_VALUE (often meant as "never"),
// which overflows in nanoseconds.
func msDuration(ms int64) time.Duration {
	const most = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case ms > most:
		return math.MaxInt64
	case ms < -most:
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}
