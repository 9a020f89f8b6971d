package kafka

import (
	"errors"
	"sync"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic of the data directory that the log left closed at Open, because
// it has more partitions than the log's limit (tlog.TopicNotOpenedError),
// is answered as Apache Kafka answers for a topic whose partitions are all
// offline, so that clients neither take it for unknown (and auto-create it
// or give up on it) nor use it:
//
//   - Metadata lists it, with its id and partitions, each
//     LEADER_NOT_AVAILABLE with leader -1 and this broker's replica offline
//     (as KRaftMetadataCache answers for a partition without a live
//     leader). Producers hold its records until their delivery timeout and
//     consumers wait; both carry on once the limit is raised and the log
//     opened again.
//   - Produce, Fetch, ListOffsets and DeleteRecords answer
//     KAFKA_STORAGE_ERROR (errorCode), as Kafka's broker answers for a
//     partition it holds in an offline log directory.
//   - CreateTopics answers TOPIC_ALREADY_EXISTS, with the message saying
//     which limit opens it; DeleteTopics deletes it.
//   - What Kafka serves for such a topic from its metadata, without its
//     partitions, is served: DescribeConfigs describes its stored configs
//     (ConfigHelper.describeConfigs looks only at the metadata);
//     AlterConfigs and IncrementalAlterConfigs change them in meta.json
//     (the controller checks only that the topic exists); OffsetCommit
//     takes commits for its partitions (KafkaApis checks only that the
//     partition is in the metadata), which OffsetFetch, DescribeGroups and
//     ListGroups show, and OffsetDelete deletes (the same check).
//   - CreatePartitions cannot grow it: any larger count is over the limit
//     that left it closed, so it answers KAFKA_STORAGE_ERROR with a message
//     naming the limit that lets it grow (Kafka would grow it); a count
//     that does not grow it is INVALID_PARTITIONS, as Kafka answers.
//
// When a client names it (Metadata, CreateTopics), the listener warns, at
// most once a minute per topic, which limit to raise.

// notOpenedWarnEvery spaces the warnings about one closed topic: clients
// ask for its metadata again every few hundred milliseconds while they
// wait for it.
const notOpenedWarnEvery = time.Minute

// notOpenedMetadata is the Metadata answer for a topic the log left closed.
func notOpenedMetadata(no *tlog.TopicNotOpenedError) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	rt.Topic = kmsg.StringPtr(no.Topic)
	rt.TopicID = topicID(no.ID)
	for p := range int32(no.Partitions) {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p
		rp.ErrorCode = kerr.LeaderNotAvailable.Code
		rp.Leader = -1
		rp.LeaderEpoch = -1
		rp.Replicas = []int32{nodeID}
		rp.ISR = []int32{nodeID}
		rp.OfflineReplicas = []int32{nodeID}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// warnIfNotOpened logs, at most once per notOpenedWarnEvery for a topic,
// that a client asked for a topic the log left closed and which limit to
// raise to serve it. Other names are ignored.
func (s *Server) warnIfNotOpened(name string) {
	var no *tlog.TopicNotOpenedError
	if _, err := s.log.TopicID(name); !errors.As(err, &no) {
		return
	}
	if !s.notOpenedWarned.allow(name, time.Now(), notOpenedWarnEvery) {
		return
	}
	s.logger.Warn("kafka client asked for a topic that is not opened: it has more partitions than the per-topic limit, so clients see it without a leader until the limit is raised",
		"topic", no.Topic, "partitions", no.Partitions, "limit", no.Limit, "error", no)
}

// warnLimiter lets a warning through once per interval for each key.
type warnLimiter struct {
	mu   sync.Mutex // guards last
	last map[string]time.Time
}

// allow reports whether the warning for key may be logged at now, and if
// so, remembers now for it.
func (w *warnLimiter) allow(key string, now time.Time, every time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.last[key]; ok && now.Sub(t) < every {
		return false
	}
	if w.last == nil {
		w.last = map[string]time.Time{}
	}
	w.last[key] = now
	return true
}
