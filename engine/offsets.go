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

// OffsetsTopic is the internal compacted topic holding source positions, as
// Kafka Connect's offset.storage.topic.
const OffsetsTopic = "_tributary.offsets"

// OffsetStore keeps the last durable position of every source connector in
// OffsetsTopic. Keys are Kafka Connect shaped, ["<connector>",{"pipeline":…}],
// values are the position bytes (JSON for every built-in source); a nil value
// (tombstone) resets a connector. For a connect.TailRecoverer the record
// also carries, in the optional header tailHeader, the log offsets the task
// had reached with that position.
type OffsetStore struct {
	backend Backend

	mu    sync.Mutex
	pos   map[string]connect.Position  // by connector name
	tails map[string][]PartitionOffset // by connector name; only with a position
}

type offsetKeyPartition struct {
	Pipeline string `json:"pipeline"`
}

func offsetKey(pipeline, connector string) []byte {
	b, _ := json.Marshal([]any{connector, offsetKeyPartition{Pipeline: pipeline}})
	return b
}

// OpenOffsetStore creates the offsets topic if needed and loads it.
func OpenOffsetStore(ctx context.Context, b Backend) (*OffsetStore, error) {
	if err := b.EnsureTopic(ctx, OffsetsTopic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		return nil, fmt.Errorf("create %s: %w", OffsetsTopic, err)
	}
	s := &OffsetStore{backend: b, pos: map[string]connect.Position{}, tails: map[string][]PartitionOffset{}}
	err := b.ReadAll(ctx, OffsetsTopic, func(r connect.Record) error {
		var key []json.RawMessage
		if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 2 {
			return nil // not ours
		}
		var name string
		if err := json.Unmarshal(key[0], &name); err != nil {
			return nil
		}
		delete(s.tails, name)
		if r.Value == nil {
			delete(s.pos, name)
			return nil
		}
		s.pos[name] = bytes.Clone(r.Value)
		for _, h := range r.Headers {
			if h.Key != tailHeader {
				continue
			}
			tail, err := decodeTail(h.Value)
			if err != nil {
				// Without it the source only misses the tail hand-over
				// and sees those records again: not worth failing for.
				slog.Warn("ignoring an unreadable tail header in "+OffsetsTopic, "connector", name, "offset", r.Offset, "error", err)
				break
			}
			s.tails[name] = tail
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", OffsetsTopic, err)
	}
	return s, nil
}

// Get returns the stored position of a source connector.
func (s *OffsetStore) Get(connector string) connect.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pos[connector]
}

// Tail returns the log offsets stored with a source connector's position
// (see connect.TailRecoverer); nil when none were.
func (s *OffsetStore) Tail(connector string) []PartitionOffset {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tails[connector])
}

// Put stores a position durably; nil resets the connector.
func (s *OffsetStore) Put(ctx context.Context, pipeline, connector string, pos connect.Position) error {
	return s.PutWithTail(ctx, pipeline, connector, pos, nil)
}

// PutWithTail stores a position durably with the log offsets the task had
// reached (nil for none).
func (s *OffsetStore) PutWithTail(ctx context.Context, pipeline, connector string, pos connect.Position, tail []PartitionOffset) error {
	rec := connect.Record{Topic: OffsetsTopic, Key: offsetKey(pipeline, connector), Value: pos}
	if pos != nil && tail != nil {
		rec.Headers = []connect.Header{{Key: tailHeader, Value: encodeTail(tail)}}
	}
	if err := s.backend.Produce(ctx, []connect.Record{rec}); err != nil {
		return fmt.Errorf("store position of %s: %w", connector, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tails, connector)
	if pos == nil {
		delete(s.pos, connector)
		return nil
	}
	s.pos[connector] = bytes.Clone(pos)
	if tail != nil {
		s.tails[connector] = slices.Clone(tail)
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

// Reload reads the offsets topic again and takes connector's position
// (and tail offsets) from it, or forgets them when the topic has none: on
// a shared backend another worker may have stored positions this store
// has not seen (a source whose lease moved here).
func (s *OffsetStore) Reload(ctx context.Context, connector string) error {
	fresh, err := OpenOffsetStore(ctx, s.backend)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos, ok := fresh.pos[connector]; ok {
		s.pos[connector] = pos
	} else {
		delete(s.pos, connector)
	}
	if tail, ok := fresh.tails[connector]; ok {
		s.tails[connector] = tail
	} else {
		delete(s.tails, connector)
	}
	return nil
}
