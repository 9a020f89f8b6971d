package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/tributary-io/tributary/connect"
)

// OffsetsTopic is the internal compacted topic (one partition) holding
// source positions, as Kafka Connect's offset.storage.topic.
const OffsetsTopic = "_tributary.offsets"

// OffsetStore keeps the last durable position of every source connector in
// OffsetsTopic. Keys are Kafka Connect shaped, ["<connector>",{"pipeline":…}],
// values are the position bytes (JSON for every built-in source); a nil value
// (tombstone) resets a connector. A source is known by its pipeline and its
// name together, as in the key: two pipelines may each have a source of the
// same name (on one shared Kafka cluster, or one after the other in a
// worker), and each has a position of its own. For a connect.TailRecoverer the record
// also carries, in the optional header tailHeader, the log offsets the task
// had reached with that position.
//
// A source created anew over REST under a name whose position is stored
// takes the pipeline of the newest record of that name, a reset included
// (Newest, Worker.ResumedPipeline): so a source deleted and created again
// with the same name resumes, as in Kafka Connect, whose offsets are keyed
// by the connector's name alone, and one whose offsets were reset starts
// over. A reset writes, besides the tombstone, a record under a key of its
// own (["<connector>",{"pipeline":…},"reset"], value {"reset":true}, see
// resetKey) that compaction keeps, while it removes the tombstone
// delete.retention.ms after the cleaner first saw it: without it, an older
// position of that name under another pipeline would become the newest
// record again, and a source created anew would resume that position
// instead of starting over. "Newest" is the order in which the store reads the topic, which
// orders records of different keys only within a partition: so the topic
// has one partition, and the worker refuses to start on one with more
// (internalTopicBounds), where Kafka Connect's offset.storage.topic may
// have many.
//
// The topic also holds, under keys of their own
// (["<sink>",{"pipeline":…},"sink"], value {"group":…}), which pipeline's
// sink of a name ran last and the group it consumed as (PutSinkRun,
// written when a sink's task starts): a sink created anew over REST takes
// that pipeline (NewestSink, Worker.ResumedSinkPipeline), so that its
// identity, its pipeline and name, which a sink may write into what it
// delivers (the Iceberg sink's snapshot summaries), is that of the sink
// whose group offsets it resumes from.
type OffsetStore struct {
	backend Backend

	mu    sync.Mutex
	pos   map[targetID]connect.Position  // by pipeline and connector
	tails map[targetID][]PartitionOffset // by pipeline and connector; only with a position
	// newest holds, by connector name, the pipeline of the newest record
	// of that name read or stored: a position or a reset.
	newest map[string]string
	// sinkRuns holds, by sink pipeline and name, the newest sink record
	// (see sinkRunKey) read or stored; seq orders them.
	sinkRuns map[targetID]sinkRun
	seq      int64
}

// sinkRun is what the newest sink record of a pipeline and name says: the
// group the sink consumed as, and when (seq, in the order of the topic).
type sinkRun struct {
	group string
	seq   int64
}

// sinkRunValue is the value of a sink record of OffsetsTopic.
type sinkRunValue struct {
	Group string `json:"group"`
}

// sinkRunMarker ends the key of a sink record of OffsetsTopic:
// ["<sink>",{"pipeline":…},"sink"]. Three elements, not the two of a
// source's position key, so that a worker, of this version or an older
// one, never reads it as a source's position.
const sinkRunMarker = "sink"

// resetMarker ends the key of a reset record of OffsetsTopic:
// ["<connector>",{"pipeline":…},"reset"], three elements as a sink
// record's, which workers that know no reset records (older ones) ignore.
const resetMarker = "reset"

// resetValue is the value of a reset record of OffsetsTopic. It is never
// empty, so that compaction keeps the newest record of each key.
type resetValue struct {
	Reset bool `json:"reset"`
}

type offsetKeyPartition struct {
	Pipeline string `json:"pipeline"`
}

func offsetKey(pipeline, connector string) []byte {
	b, _ := json.Marshal([]any{connector, offsetKeyPartition{Pipeline: pipeline}})
	return b
}

// sinkRunKey is the OffsetsTopic key of the record saying that the sink of
// a pipeline and name ran (see OffsetStore.PutSinkRun).
func sinkRunKey(pipeline, sink string) []byte {
	b, _ := json.Marshal([]any{sink, offsetKeyPartition{Pipeline: pipeline}, sinkRunMarker})
	return b
}

// resetKey is the OffsetsTopic key of the record saying that the position
// of the source of a pipeline and name was reset (see
// OffsetStore.PutWithTail).
func resetKey(pipeline, connector string) []byte {
	b, _ := json.Marshal([]any{connector, offsetKeyPartition{Pipeline: pipeline}, resetMarker})
	return b
}

// decodeMarkedKey reads the connector an OffsetsTopic key of three
// elements ending with marker (a sink record's, a reset record's) is
// about; ok is false for a key of another shape.
func decodeMarkedKey(k []byte, marker string) (id targetID, ok bool) {
	var key []json.RawMessage
	if err := json.Unmarshal(k, &key); err != nil || len(key) != 3 {
		return id, false
	}
	var part offsetKeyPartition
	var got string
	if json.Unmarshal(key[0], &id.connector) != nil || json.Unmarshal(key[1], &part) != nil ||
		json.Unmarshal(key[2], &got) != nil || got != marker {
		return id, false
	}
	id.pipeline = part.Pipeline
	return id, true
}

// decodeSinkRunKey reads the sink an OffsetsTopic key of a sink record is
// about; ok is false for a key of another shape.
func decodeSinkRunKey(k []byte) (id targetID, ok bool) {
	return decodeMarkedKey(k, sinkRunMarker)
}

// decodeResetKey reads the source an OffsetsTopic key of a reset record is
// about; ok is false for a key of another shape.
func decodeResetKey(k []byte) (id targetID, ok bool) {
	return decodeMarkedKey(k, resetMarker)
}

// decodeOffsetKey reads the source an OffsetsTopic key is about; ok is
// false for a key of another shape (not ours).
func decodeOffsetKey(k []byte) (id targetID, ok bool) {
	var key []json.RawMessage
	if err := json.Unmarshal(k, &key); err != nil || len(key) != 2 {
		return id, false
	}
	var part offsetKeyPartition
	if json.Unmarshal(key[0], &id.connector) != nil || json.Unmarshal(key[1], &part) != nil {
		return id, false
	}
	id.pipeline = part.Pipeline
	return id, true
}

// OpenOffsetStore creates the offsets topic if needed, checks that it has
// one partition and is compacted (see internalTopicBounds, checkCompacted),
// and loads it.
func OpenOffsetStore(ctx context.Context, b Backend) (*OffsetStore, error) {
	return openOffsetStore(ctx, b, slog.Default())
}

// openOffsetStore is OpenOffsetStore with the logger of the worker.
func openOffsetStore(ctx context.Context, b Backend, logger *slog.Logger) (*OffsetStore, error) {
	if err := ensureOffsetsTopic(ctx, b); err != nil {
		return nil, err
	}
	if _, err := internalTopicBounds(ctx, b, OffsetsTopic, offsetsOnePartition); err != nil {
		return nil, err
	}
	if err := checkCompacted(ctx, b, logger, OffsetsTopic,
		"the sources' positions", "the sources start over from the beginning", "offset.storage.topic"); err != nil {
		return nil, err
	}
	return readOffsetStore(ctx, b)
}

func ensureOffsetsTopic(ctx context.Context, b Backend) error {
	if err := b.EnsureTopic(ctx, OffsetsTopic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		return fmt.Errorf("create %s: %w (create it with cleanup.policy=compact, or allow the worker to create topics)", OffsetsTopic, err)
	}
	return nil
}

// readOffsetStore creates the offsets topic if needed and loads it,
// without the checks of OpenOffsetStore (made once, when the worker
// starts).
func readOffsetStore(ctx context.Context, b Backend) (*OffsetStore, error) {
	if err := ensureOffsetsTopic(ctx, b); err != nil {
		return nil, err
	}
	s := &OffsetStore{backend: b, pos: map[targetID]connect.Position{}, tails: map[targetID][]PartitionOffset{}, newest: map[string]string{},
		sinkRuns: map[targetID]sinkRun{}}
	err := b.ReadAll(ctx, OffsetsTopic, func(r connect.Record) error {
		if id, ok := decodeSinkRunKey(r.Key); ok {
			s.readSinkRun(id, r.Value)
			return nil
		}
		if id, ok := decodeResetKey(r.Key); ok {
			if r.Value != nil { // a tombstone of it (Tributary writes none) says nothing
				s.newest[id.connector] = id.pipeline
			}
			return nil
		}
		id, ok := decodeOffsetKey(r.Key)
		if !ok {
			return nil // not ours
		}
		s.newest[id.connector] = id.pipeline
		delete(s.tails, id)
		if r.Value == nil {
			delete(s.pos, id)
			return nil
		}
		s.pos[id] = bytes.Clone(r.Value)
		for _, h := range r.Headers {
			if h.Key != tailHeader {
				continue
			}
			tail, err := decodeTail(h.Value)
			if err != nil {
				// Without it the source only misses the tail hand-over
				// and sees those records again: not worth failing for.
				slog.Warn("ignoring an unreadable tail header in "+OffsetsTopic, "pipeline", id.pipeline, "connector", id.connector, "offset", r.Offset, "error", err)
				break
			}
			s.tails[id] = tail
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", OffsetsTopic, err)
	}
	return s, nil
}

// Get returns the stored position of the source connector of a pipeline.
func (s *OffsetStore) Get(pipeline, connector string) connect.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos[targetID{pipeline, connector}]
}

// Newest returns the pipeline of the newest record the offsets topic holds
// for a source connector of that name, under any pipeline: the pipeline of
// the source of that name that stored a position or had it reset last (a
// reset's record outlives its tombstone, see resetKey). ok is false when
// the topic holds none of that name.
func (s *OffsetStore) Newest(connector string) (pipeline string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pipeline, ok = s.newest[connector]
	return pipeline, ok
}

// readSinkRun takes a sink record read from OffsetsTopic; one without a
// readable group (a tombstone: Tributary writes none) forgets the sink.
func (s *OffsetStore) readSinkRun(id targetID, value []byte) {
	var v sinkRunValue
	if value == nil || json.Unmarshal(value, &v) != nil || v.Group == "" {
		delete(s.sinkRuns, id)
		return
	}
	s.seq++
	s.sinkRuns[id] = sinkRun{group: v.Group, seq: s.seq}
}

// PutSinkRun records durably that the sink of a pipeline and name runs,
// consuming as group, unless the store shows it as the newest sink of
// that name and group already and no other worker writes the topic (on a
// shared backend one may have recorded another since). NewestSink finds
// it.
func (s *OffsetStore) PutSinkRun(ctx context.Context, pipeline, sink, group string) error {
	_, shared := s.backend.(SourceLeaser)
	if p, ok := s.NewestSink(sink, group); ok && p == pipeline && !shared {
		return nil
	}
	val, _ := json.Marshal(sinkRunValue{Group: group}) // a string: cannot fail
	rec := connect.Record{Topic: OffsetsTopic, Key: sinkRunKey(pipeline, sink), Value: val}
	if err := s.backend.Produce(ctx, []connect.Record{rec}); err != nil {
		return fmt.Errorf("record in %s that sink %s of pipeline %s runs: %w", OffsetsTopic, sink, pipeline, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.sinkRuns[targetID{pipeline, sink}] = sinkRun{group: group, seq: s.seq}
	return nil
}

// NewestSink returns the pipeline of the sink of that name that ran last
// consuming as group, as the sink records of the offsets topic say (the
// newest of each pipeline and name counts: a sink of that pipeline and
// name that ran with another group since does not). ok is false when
// there is none.
func (s *OffsetStore) NewestSink(sink, group string) (pipeline string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var newest int64
	for id, run := range s.sinkRuns {
		if id.connector == sink && run.group == group && run.seq > newest {
			pipeline, newest, ok = id.pipeline, run.seq, true
		}
	}
	return pipeline, ok
}

// Tail returns the log offsets stored with the position of the source
// connector of a pipeline (see connect.TailRecoverer); nil when none were.
func (s *OffsetStore) Tail(pipeline, connector string) []PartitionOffset {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tails[targetID{pipeline, connector}])
}

// Put stores a position durably; nil resets the connector (see
// PutWithTail).
func (s *OffsetStore) Put(ctx context.Context, pipeline, connector string, pos connect.Position) error {
	return s.PutWithTail(ctx, pipeline, connector, pos, nil)
}

// PutWithTail stores a position durably with the log offsets the task had
// reached (nil for none). A nil position resets the connector: its reset
// record (resetKey), which Newest still finds once compaction has removed
// the tombstone, then a tombstone of its position.
func (s *OffsetStore) PutWithTail(ctx context.Context, pipeline, connector string, pos connect.Position, tail []PartitionOffset) error {
	rec := connect.Record{Topic: OffsetsTopic, Key: offsetKey(pipeline, connector), Value: pos}
	if pos != nil && tail != nil {
		rec.Headers = []connect.Header{{Key: tailHeader, Value: encodeTail(tail)}}
	}
	recs := []connect.Record{rec}
	if pos == nil {
		// The reset record first: where a backend writes the two one at a
		// time (a Kafka cluster) and only the first lands, the position is
		// still there, as this store still has it, and resetting again
		// finishes the job; the other way round the topic would hold the
		// reset while this store still resumed the old position.
		val, _ := json.Marshal(resetValue{Reset: true}) // a bool: cannot fail
		recs = []connect.Record{{Topic: OffsetsTopic, Key: resetKey(pipeline, connector), Value: val}, rec}
	}
	if err := s.backend.Produce(ctx, recs); err != nil {
		if pos == nil {
			return fmt.Errorf("reset position of source %s of pipeline %s: %w (reset it again)", connector, pipeline, err)
		}
		return fmt.Errorf("store position of source %s of pipeline %s: %w", connector, pipeline, err)
	}
	id := targetID{pipeline, connector}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newest[connector] = pipeline
	delete(s.tails, id)
	if pos == nil {
		delete(s.pos, id)
		return nil
	}
	s.pos[id] = bytes.Clone(pos)
	if tail != nil {
		s.tails[id] = slices.Clone(tail)
	}
	return nil
}

func encodeTail(tail []PartitionOffset) []byte {
	out := make([]tailOffset, len(tail))
	for i, po := range tail {
		out[i] = tailOffset(po)
	}
	b, _ := json.Marshal(out) // plain strings and numbers: cannot fail
	return b
}

func decodeTail(b []byte) ([]PartitionOffset, error) {
	var in []tailOffset
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("tail header %q: %w", b, err)
	}
	out := make([]PartitionOffset, len(in))
	for i, t := range in {
		out[i] = PartitionOffset(t)
	}
	return out, nil
}

// Reload reads the offsets topic again and takes the position (and tail
// offsets) of the source connector of a pipeline from it, or forgets them
// when the topic has none: on a shared backend another worker may have
// stored positions this store has not seen (a source whose lease moved
// here).
func (s *OffsetStore) Reload(ctx context.Context, pipeline, connector string) error {
	fresh, err := readOffsetStore(ctx, s.backend)
	if err != nil {
		return err
	}
	id := targetID{pipeline, connector}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos, ok := fresh.pos[id]; ok {
		s.pos[id] = pos
	} else {
		delete(s.pos, id)
	}
	if tail, ok := fresh.tails[id]; ok {
		s.tails[id] = tail
	} else {
		delete(s.tails, id)
	}
	if p, ok := fresh.newest[connector]; ok {
		s.newest[connector] = p
	}
	return nil
}
