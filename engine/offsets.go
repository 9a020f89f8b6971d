package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tributary-io/tributary/connect"
)

// OffsetsTopic is the internal compacted topic holding source positions, as
// Kafka Connect's offset.storage.topic.
const OffsetsTopic = "_tributary.offsets"

// OffsetStore keeps the last durable position of every source connector in
// OffsetsTopic. Keys are Kafka Connect shaped, ["<connector>",{"pipeline":…}],
// values are the position bytes (JSON for every built-in source); a nil value
// (tombstone) resets a connector.
type OffsetStore struct {
	backend Backend

	mu  sync.Mutex
	pos map[string]connect.Position // by connector name
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
	s := &OffsetStore{backend: b, pos: map[string]connect.Position{}}
	err := b.ReadAll(ctx, OffsetsTopic, func(r connect.Record) error {
		var key []json.RawMessage
		if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 2 {
			return nil // not ours
		}
		var name string
		if err := json.Unmarshal(key[0], &name); err != nil {
			return nil
		}
		if r.Value == nil {
			delete(s.pos, name)
		} else {
			s.pos[name] = bytes.Clone(r.Value)
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

// Put stores a position durably; nil resets the connector.
func (s *OffsetStore) Put(ctx context.Context, pipeline, connector string, pos connect.Position) error {
	rec := connect.Record{Topic: OffsetsTopic, Key: offsetKey(pipeline, connector), Value: pos}
	if err := s.backend.Produce(ctx, []connect.Record{rec}); err != nil {
		return fmt.Errorf("store position of %s: %w", connector, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos == nil {
		delete(s.pos, connector)
	} else {
		s.pos[connector] = bytes.Clone(pos)
	}
	return nil
}
