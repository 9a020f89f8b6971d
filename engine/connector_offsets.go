package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// offsets returns the connector's offsets in Kafka Connect's shape. A
// source has one partition, {"pipeline": …}, whose offset is its stored
// position (shown as JSON when it is JSON); a sink has one entry per
// partition of its group: {"kafka_topic","kafka_partition"} → {"kafka_offset"}.
func (r *runner) offsets(ctx context.Context) ([]OffsetEntry, error) {
	switch r.spec.Kind {
	case connect.KindSource:
		pos := r.w.offsets.Get(r.spec.Pipeline, r.spec.Name)
		if _, shared := r.w.opts.Backend.(SourceLeaser); shared {
			// Workers share the backend: the position may have been stored
			// by the worker holding the source's lease, which this one's
			// store has not seen. Read it from the offsets topic.
			fresh, err := readOffsetStore(ctx, r.w.opts.Backend)
			if err != nil {
				return nil, fmt.Errorf("read the position of source %s: %w", r.spec.Name, err)
			}
			pos = fresh.Get(r.spec.Pipeline, r.spec.Name)
		}
		if pos == nil {
			return []OffsetEntry{}, nil
		}
		var v any
		if err := json.Unmarshal(pos, &v); err != nil {
			v = string(pos)
		}
		return []OffsetEntry{{Partition: map[string]any{"pipeline": r.spec.Pipeline}, Offset: v}}, nil
	default:
		offs, err := r.w.opts.Backend.GroupOffsets(ctx, r.spec.Group)
		if err != nil {
			return nil, err
		}
		out := []OffsetEntry{}
		for _, o := range offs {
			out = append(out, OffsetEntry{
				Partition: map[string]any{"kafka_topic": o.Topic, "kafka_partition": o.Partition},
				Offset:    map[string]any{"kafka_offset": o.Offset},
			})
		}
		return out, nil
	}
}

// alterOffsets applies a PATCH of offsets, once the connector's task in
// this worker has ended (waitStoppedHere) and no other worker (or other
// consumer) is left in its group (waitGroupEmpty).
func (r *runner) alterOffsets(ctx context.Context, entries []OffsetEntry) error {
	if r.spec.Kind == connect.KindSource {
		if err := r.checkSourcePartitions(entries); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(offsetsLeaveWait)
	if err := r.waitStoppedHere(ctx, deadline); err != nil {
		return err
	}
	switch r.spec.Kind {
	case connect.KindSource:
		positions := make([][]byte, len(entries))
		for i, e := range entries {
			if e.Offset == nil {
				continue
			}
			b, err := json.Marshal(e.Offset)
			if err != nil {
				return fmt.Errorf("%w: offset %v: %v", ErrBadRequest, e.Offset, err)
			}
			positions[i] = b
		}
		if err := r.waitGroupEmpty(ctx, deadline); err != nil {
			return err
		}
		for _, pos := range positions {
			if err := r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, pos); err != nil {
				return err
			}
		}
		return nil
	default:
		set, _, err := r.sinkOffsets(ctx, entries)
		if err != nil {
			return err
		}
		if err := r.waitGroupEmpty(ctx, deadline); err != nil {
			return err
		}
		if err := r.w.opts.Backend.CommitGroupOffsets(ctx, r.spec.Group, set); err != nil {
			return r.refusedForMembers(ctx, err)
		}
		return nil
	}
}

// checkSourcePartitions refuses a PATCH of a source's offsets that names
// a partition other than the source's one, {"pipeline": …}: its offset
// would otherwise become this source's position, although it was meant
// for another (an entry copied from another connector's GET, say).
func (r *runner) checkSourcePartitions(entries []OffsetEntry) error {
	own := map[string]any{"pipeline": r.spec.Pipeline}
	for i, e := range entries {
		if p, ok := e.Partition["pipeline"].(string); ok && p == r.spec.Pipeline && len(e.Partition) == 1 {
			continue
		}
		given, _ := json.Marshal(e.Partition)
		want, _ := json.Marshal(own)
		return fmt.Errorf("%w: offsets[%d]: partition %s is not source %s's: it has one partition, %s (GET /connectors/%s/offsets shows it); give that partition, or alter the offsets of the connector the partition belongs to",
			ErrBadRequest, i, given, r.spec.Name, want, r.spec.Name)
	}
	return nil
}

// AlterOffsetsWithNotes is AlterOffsets that also returns notes on what it
// accepted but will not take effect as written: a sink offset below its
// partition's log start offset, whose records are gone, so the sink starts
// that partition at the log start offset (auto.offset.reset=earliest).
func (w *Worker) AlterOffsetsWithNotes(ctx context.Context, name string, entries []OffsetEntry) ([]string, error) {
	if err := w.AlterOffsets(ctx, name, entries); err != nil {
		return nil, err
	}
	r, err := w.runner(name)
	if err != nil || r.spec.Kind == connect.KindSource {
		return nil, nil
	}
	// The offsets are committed; the notes are information only, so a
	// failure to compute them (a topic deleted meanwhile) is no error.
	_, notes, err := r.sinkOffsets(ctx, entries)
	if err != nil {
		return nil, nil
	}
	return notes, nil
}

// sinkOffsets turns a PATCH of a sink's offsets into the offsets to commit.
// As Kafka's AlterConsumerGroupOffsets does, it refuses a topic or partition
// that does not exist; an offset it checks as `groups reset-offsets` does,
// against the partition's [log start, log end] (tlog.CheckOffset), but
// refuses one past the end (or negative) instead of clamping it: a sink
// whose committed offset is past the end starts the partition over from its
// start, delivering every record again. One below the log start is
// accepted, as Kafka Connect does, with a note: the sink then starts at the
// log start offset. A null offset resets the partition to its log start.
func (r *runner) sinkOffsets(ctx context.Context, entries []OffsetEntry) (set []PartitionOffset, notes []string, err error) {
	var topics []string
	bounds := map[string][]PartitionBounds{}
	for i, e := range entries {
		topic, ok := e.Partition["kafka_topic"].(string)
		if !ok || topic == "" {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: sink offsets need a partition with kafka_topic and kafka_partition", ErrBadRequest, i)
		}
		part, ok := asInt(e.Partition["kafka_partition"])
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: kafka_partition of %s is not an integer", ErrBadRequest, i, topic)
		}
		b, ok := bounds[topic]
		if !ok {
			if topics == nil {
				if topics, err = r.w.opts.Backend.ListTopics(ctx); err != nil {
					return nil, nil, fmt.Errorf("list topics: %w", err)
				}
			}
			if !slices.Contains(topics, topic) {
				return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): topic %s does not exist; list topics with `tributary topics list`",
					ErrBadRequest, i, topic, part, topic)
			}
			if b, err = r.w.opts.Backend.EndOffsets(ctx, topic); err != nil {
				return nil, nil, fmt.Errorf("end offsets of %s: %w", topic, err)
			}
			bounds[topic] = b
		}
		pb, found := PartitionBounds{}, false
		for _, x := range b {
			if int64(x.Partition) == part {
				pb, found = x, true
			}
		}
		if !found {
			msg := fmt.Sprintf("%v: %s has no partition %d", tlog.ErrUnknownPartition, topic, part)
			if part >= math.MinInt32 && part <= math.MaxInt32 {
				if err := tlog.CheckPartition(topic, int32(part), len(b)); err != nil {
					msg = err.Error()
				}
			}
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): %s", ErrBadRequest, i, topic, part, msg)
		}
		tp := tlog.TopicPartition{Topic: topic, Partition: pb.Partition}
		if e.Offset == nil {
			// Reset: start from the earliest offset again.
			set = append(set, PartitionOffset{Topic: topic, Partition: pb.Partition, Offset: pb.Start})
			continue
		}
		om, ok := e.Offset.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: offset of %s-%d must be {\"kafka_offset\": N}", ErrBadRequest, i, topic, part)
		}
		off, ok := asInt(om["kafka_offset"])
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: kafka_offset of %s-%d must be an integer", ErrBadRequest, i, topic, part)
		}
		var re *tlog.OffsetRangeError
		switch err := tlog.CheckOffset(tp, off, pb.Start, pb.End); {
		case err == nil:
		case off < 0:
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): kafka_offset %d is negative; offsets start at 0 (valid offsets of %s-%d: [%d, %d], from the log start to the log end offset)",
				ErrBadRequest, i, topic, part, off, topic, part, pb.Start, pb.End)
		case errors.As(err, &re) && re.Below():
			notes = append(notes, fmt.Sprintf("%v: its records are gone, so the connector will start %s-%d at the log start offset (auto.offset.reset=earliest)", err, topic, part))
		default:
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): %v; a committed offset past the end makes the sink start the partition over (auto.offset.reset=earliest) and deliver its records again",
				ErrBadRequest, i, topic, part, err)
		}
		set = append(set, PartitionOffset{Topic: topic, Partition: pb.Partition, Offset: off})
	}
	return set, notes, nil
}

// resetOffsets applies a DELETE of offsets, once the connector's task in
// this worker has ended (waitStoppedHere) and no other worker (or other
// consumer) is left in its group (waitGroupEmpty).
func (r *runner) resetOffsets(ctx context.Context) error {
	deadline := time.Now().Add(offsetsLeaveWait)
	if err := r.waitStoppedHere(ctx, deadline); err != nil {
		return err
	}
	if err := r.waitGroupEmpty(ctx, deadline); err != nil {
		return err
	}
	if r.spec.Kind == connect.KindSource {
		return r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, nil)
	}
	if err := r.w.opts.Backend.DeleteGroup(ctx, r.spec.Group); err != nil {
		return r.refusedForMembers(ctx, err)
	}
	return nil
}

// GroupMemberLister is an optional Backend capability: the members of a
// consumer group, each named for the user (client id, host), asked without
// joining the group. A backend that several workers share (kafka)
// implements it, so that a change to a stopped sink's offsets waits for the
// other workers' consumers to leave the sink's group.
type GroupMemberLister interface {
	GroupMembers(ctx context.Context, group string) ([]string, error)
}

// offsetsLeaveWait bounds how long a PATCH or DELETE of a stopped
// connector's offsets waits for the other workers to leave its group, on a
// backend that shares target states (kafka). A stop made through one
// worker reaches the others through TargetsTopic within a fetch (half a
// second); each then finishes its batch in flight, stores its position or
// commits its offsets, and leaves: well under a second, a few seconds on a
// loaded machine. 30 s leaves room for a slow drain and stays below the 60
// s that proxies and HTTP clients commonly give a request. It is shorter
// than Kafka's default session timeout (45 s) on purpose: a member that
// stays that long has not seen the stop (an older worker, one that does not
// read TargetsTopic, a consumer outside tributary) or has died, and the
// answer names it rather than keep the request open. The request's context
// ends the wait sooner.
const offsetsLeaveWait = 30 * time.Second

// groupMembers returns how to list the members of the connector's group on
// this backend (a source's lease, a sink's consumer group), and what the
// group is, for messages; nil when the backend has none to ask (embedded:
// one worker owns the log, and its own task has stopped).
func (r *runner) groupMembers() (list func(context.Context) ([]string, error), what string) {
	if r.spec.Kind == connect.KindSource {
		l, ok := r.w.opts.Backend.(SourceLeaser)
		if !ok {
			return nil, ""
		}
		return func(ctx context.Context) ([]string, error) {
			return l.LeaseMembers(ctx, r.spec.Pipeline, r.spec.Name)
		}, "its lease"
	}
	l, ok := r.w.opts.Backend.(GroupMemberLister)
	if !ok {
		return nil, ""
	}
	return func(ctx context.Context) ([]string, error) {
		return l.GroupMembers(ctx, r.spec.Group)
	}, "its consumer group " + r.spec.Group
}

// waitStoppedHere waits until the stopped connector's task in this worker
// has ended: it finishes its batch in flight and stores its position (or
// commits its offsets) first. On a backend that shares target states
// (kafka) the stop may have come through another worker an instant ago:
// the wait lasts until then, at most until deadline or until ctx ends,
// after which it refuses with ErrConflict. Otherwise the stop was made
// through this worker, which answered it once the task had ended: a task
// still stopping is refused at once.
func (r *runner) waitStoppedHere(ctx context.Context, deadline time.Time) error {
	if !r.running() {
		return nil
	}
	if _, shared := r.w.sharer(); !shared {
		return fmt.Errorf("%w: connector %s is stopping: its task has not finished and stored its position yet; retry in a moment", ErrBadRequest, r.spec.Name)
	}
	start := time.Now()
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := r.waitStopped(wctx)
	if err != nil && wctx.Err() != nil {
		return fmt.Errorf("%w: connector %s is stopped, but its task in this worker (%s) has not finished its batch in flight after %s; see its status and this worker's log, and retry once it has",
			ErrConflict, r.spec.Name, r.w.opts.WorkerID, time.Since(start).Round(100*time.Millisecond))
	}
	return err
}

// waitGroupEmpty waits until the group of a stopped connector (a source's
// lease, a sink's consumer group) has no member left, as Kafka changes a
// group's offsets only when the group is empty: a worker still in it has
// not finished stopping its task, and would store its own position or
// commit its own offsets over the new ones. On a backend that shares
// target states (kafka) the stop reaches every worker, and each leaves
// once its task has stopped: the wait lasts until then, at most until
// deadline or until ctx ends, after which it refuses with ErrConflict
// naming the members left. Without shared target states it checks once.
func (r *runner) waitGroupEmpty(ctx context.Context, deadline time.Time) error {
	list, what := r.groupMembers()
	if list == nil {
		return nil
	}
	if _, shared := r.w.sharer(); !shared {
		deadline = time.Time{}
	}
	start := time.Now()
	bo := backoff{initial: 50 * time.Millisecond, max: 500 * time.Millisecond} // a leave is seen within 0.5 s
	var members []string
	for {
		m, err := list(ctx)
		if err != nil {
			if ctx.Err() != nil && members != nil {
				// The request ended while asking again.
				return r.membersLeft(what, members, time.Since(start))
			}
			return fmt.Errorf("find out whether a worker is still in %s (%s %s): %w", what, r.spec.Kind, r.spec.Name, err)
		}
		if len(m) == 0 {
			return nil
		}
		members = m
		left := time.Until(deadline)
		if left <= 0 || sleep(ctx, min(bo.next(), left)) != nil {
			return r.membersLeft(what, members, time.Since(start))
		}
	}
}

// refusedForMembers turns the backend's refusal to change the offsets of
// a group that has members again (one joined since waitGroupEmpty: the
// connector resumed meanwhile, or a consumer outside tributary) into the
// conflict naming them.
func (r *runner) refusedForMembers(ctx context.Context, err error) error {
	list, what := r.groupMembers()
	if list == nil {
		return err
	}
	if members, lerr := list(ctx); lerr == nil && len(members) > 0 {
		return fmt.Errorf("%w (%v)", r.membersLeft(what, members, 0), err)
	}
	return err
}

// membersLeft is the conflict of a change of offsets refused because
// members are still in the connector's group after waiting waited.
func (r *runner) membersLeft(what string, members []string, waited time.Duration) error {
	who := "worker " + strings.Join(members, ", worker ")
	outside := ""
	if r.spec.Kind != connect.KindSource {
		who = "member " + strings.Join(members, ", member ")
		outside = fmt.Sprintf("; a member that is no worker is a consumer outside tributary reading as group %s: stop it", r.spec.Group)
	}
	after := ""
	if waited = waited.Round(100 * time.Millisecond); waited > 0 {
		after = fmt.Sprintf(" after %s", waited)
	}
	return fmt.Errorf("%w: %s %s is stopped, but %s is still in %s%s; its offsets change only once every worker has stopped the task and left. "+
		"A worker that stays has not applied the stop (read from %s): it runs an older version of tributary (stop the connector through it, PUT /connectors/%s/stop on that worker, or shut it down) "+
		"or cannot read %s (see its log); or it has died, and leaves once its session times out (log.kafka.session_timeout)%s. Retry once it has left",
		ErrConflict, r.spec.Kind, r.spec.Name, who, what, after, TargetsTopic, r.spec.Name, TargetsTopic, outside)
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), n == float64(int64(n))
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
