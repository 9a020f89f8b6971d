package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// The worker keeps its state in internal topics of the log (OffsetsTopic,
// TargetsTopic), which it creates with one partition and
// cleanup.policy=compact. A user or a cluster may have created them before
// (by hand, by a provisioning script, by a cluster's auto-creation with its
// defaults): the worker checks them when it starts and refuses, as Kafka
// Connect refuses its internal topics, one it cannot rely on, saying what
// is wrong and how to fix it.

// onePartitionRule says, for the error refusing an internal topic of
// several partitions, why it must have one and how to recreate it.
type onePartitionRule struct {
	// why ends "it must have exactly one ...": what goes wrong with more.
	why string
	// fix says how to recreate the topic, and what is lost then.
	fix string
}

var offsetsOnePartition = onePartitionRule{
	why: "(unlike Kafka Connect's offset.storage.topic: besides the newest position of each key, the worker reads the newest record of a connector's name across pipelines): " +
		"a source or sink created anew over the REST API takes up the pipeline of the newest record of its name, but records of one name under different pipelines land on different partitions, " +
		"which have no order among them, so it could resume an older connector's position",
	fix: "Stop the workers, delete it (kafka-topics.sh --bootstrap-server BROKERS --delete --topic " + OffsetsTopic + ") and start a worker, which creates it with one partition and cleanup.policy=compact; " +
		"the positions it holds are lost and the sources start over, unless you copy its records into the new topic first (see \"Internal topics\" in docs/kafka.md). " +
		"Tributary's own log creates its _tributary.* topics with one partition and cannot delete them: one an older version made with more means starting on a new data directory",
}

var targetsOnePartition = onePartitionRule{
	why: "(as Kafka Connect requires of its config.storage.topic): the workers follow its partition 0 only, so a pause, resume, stop or restart written to another would reach no worker",
	fix: "Delete it (kafka-topics.sh --bootstrap-server BROKERS --delete --topic " + TargetsTopic + ") and start the worker, which creates it with one partition; " +
		"the target states it holds are lost, so pause or stop those connectors again",
}

// internalTopicBounds returns the bounds of the one partition of an
// internal topic, and refuses a topic of several partitions (rule says
// why). A topic just created may not be known to every broker yet: its
// end offsets are asked for a few times before the worker gives up.
func internalTopicBounds(ctx context.Context, b Backend, topic string, rule onePartitionRule) (PartitionBounds, error) {
	var bounds []PartitionBounds
	bo := backoff{initial: 100 * time.Millisecond, max: 2 * time.Second}
	for attempt := 1; ; attempt++ {
		var err error
		if bounds, err = b.EndOffsets(ctx, topic); err == nil {
			break
		}
		if attempt == 5 {
			return PartitionBounds{}, fmt.Errorf("read the partitions of %s: %w (check that it exists with one partition)", topic, err)
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return PartitionBounds{}, fmt.Errorf("read the partitions of %s: %w", topic, err)
		}
	}
	if len(bounds) != 1 {
		return PartitionBounds{}, fmt.Errorf("topic %s has %d partitions, but it must have exactly one %s. %s", topic, len(bounds), rule.why, rule.fix)
	}
	return bounds[0], nil
}

// checkCompacted refuses an internal topic (OffsetsTopic, TargetsTopic)
// whose cleanup.policy is not compact alone, as Kafka Connect refuses its
// internal topics (kcName names the equivalent one): with delete, the log
// removes what the topic holds, the newest record of a key included, once
// it is older than the topic's retention, and lost follows. A backend that
// cannot describe the topic (no TopicDescriber, or a refusal: an ACL
// without DescribeConfigs) is not checked; a warning says so.
func checkCompacted(ctx context.Context, b Backend, logger *slog.Logger, topic, what, lost, kcName string) error {
	td, ok := b.(TopicDescriber)
	if !ok {
		return nil
	}
	info, err := td.DescribeTopic(ctx, topic)
	if err != nil {
		logger.Warn("cannot check that "+topic+" has cleanup.policy=compact; if it has delete, "+what+" it holds are lost once older than its retention",
			"topic", topic, "error", err)
		return nil
	}
	policy, ok := info.Config["cleanup.policy"]
	if !ok {
		return nil // the backend does not tell
	}
	var compact, other bool
	for p := range strings.SplitSeq(policy, ",") {
		if strings.TrimSpace(p) == "compact" {
			compact = true
		} else {
			other = true
		}
	}
	if compact && !other {
		return nil
	}
	return fmt.Errorf("topic %s has cleanup.policy=%s, but it must be compact alone (as Kafka Connect requires of its %s): otherwise the log deletes %s once they are older than the topic's retention, and %s. "+
		"Set it with `tributary topics alter %s --config cleanup.policy=compact` (on a Kafka cluster, kafka-configs.sh --bootstrap-server BROKERS --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact), then start the worker again",
		topic, policy, kcName, what, lost, topic, topic)
}
