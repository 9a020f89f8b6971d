package kafkabackend

import (
	"context"
	"fmt"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Target states: every worker on the cluster keeps the connectors' target
// states (RUNNING, PAUSED, STOPPED) in the engine's compacted topic
// engine.TargetsTopic and follows it with FollowTopic, as Kafka Connect's
// workers follow their config topic, so that a pause, resume or stop made
// through one worker reaches every worker that loads the connector. Restart
// requests travel through the same topic, so that a restart made through
// one worker restarts the connector's tasks in every worker. The topic has
// one partition: the worker refuses to start on one with more.

var _ engine.TargetSharer = (*Backend)(nil)

// FollowTopic implements engine.TargetSharer with a client of its own,
// outside any group, reading partition 0 of topic from offset from (from
// the start when from is out of range, e.g. after the topic was created
// again). It returns when ctx ends or fn fails; a fetch error kgo does not
// retry on its own ends it too, after fn had the records fetched with it.
func (b *Backend) FollowTopic(ctx context.Context, topic string, from int64, fn func([]connect.Record) error) error {
	cl, err := kgo.NewClient(append(b.base[:len(b.base):len(b.base)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(fetchMaxWait),
	)...)
	if err != nil {
		return fmt.Errorf("follow %s: %w", topic, err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var recs []connect.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, fromKgo(r)) })
		if len(recs) > 0 {
			if err := fn(recs); err != nil {
				return err
			}
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("follow %s: fetch partition %d of %s: %w", topic, p, t, err)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
}
