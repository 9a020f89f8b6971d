package iceberg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// changesName is the test source of change events.
const changesName = "test-changes"

// changesConnector is a source of Debezium change events (with embedded
// schemas) of one Postgres-like table shop.items(id bigint primary key,
// seq bigint, name text, qty int, and from seq e2eNoteFrom on also note
// text). Event seq N sets or deletes one id, chosen from (seed, N) alone,
// so the events are the same after a restart and a test can compute the
// table's final state; a delete is followed by a tombstone, as Debezium
// does. The position is {"seq":N}.
func changesConnector() connect.Connector {
	return connect.Connector{
		Name: changesName, Kind: connect.KindSource, Version: "0.0.1",
		Description: "Test change events.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "seed", Type: connect.TypeInt, Default: "1"},
			{Name: "keys", Type: connect.TypeInt, Default: "50"},
			{Name: "batch.size", Type: connect.TypeInt, Default: "40"},
			{Name: "interval", Type: connect.TypeDuration, Default: "15ms"},
			{Name: "max.events", Type: connect.TypeInt, Default: "0"},
		}},
		NewSource: func() connect.Source { return &changesSource{} },
	}
}

// change is the change event of one seq.
type change struct {
	op   connect.Op
	id   int64
	name string
	qty  int32
}

// changeAt returns the change of seq: a delete one time in five, else an
// upsert (op c or u at random: the sink treats them alike).
func changeAt(seed, seq uint64, keys int) change {
	rng := rand.New(rand.NewPCG(seed, seq))
	c := change{id: 1 + int64(rng.IntN(keys))}
	switch n := rng.IntN(10); {
	case n < 2:
		c.op = connect.OpDelete
	case n < 6:
		c.op = connect.OpCreate
	default:
		c.op = connect.OpUpdate
	}
	c.name = fmt.Sprintf("item-%d-%d", c.id, rng.IntN(1000))
	c.qty = int32(rng.IntN(100))
	return c
}

type changesSource struct {
	seed, max uint64
	keys      int
	batch     int
	interval  time.Duration
	next      uint64
	schemas   [2]*connect.EventSchema // without and with note
}

var _ connect.Source = (*changesSource)(nil)

func (s *changesSource) Open(_ context.Context, cfg connect.Config) error {
	var errs [5]error
	var seed, keys, batch, maxEvents int64
	seed, errs[0] = cfg.Int("seed")
	keys, errs[1] = cfg.Int("keys")
	batch, errs[2] = cfg.Int("batch.size")
	s.interval, errs[3] = cfg.Duration("interval")
	maxEvents, errs[4] = cfg.Int("max.events")
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	s.seed, s.keys, s.batch, s.max = uint64(seed), int(keys), int(batch), uint64(maxEvents)
	s.next = 1
	if cfg.Position != nil {
		var p struct{ Seq uint64 }
		if err := json.Unmarshal(cfg.Position, &p); err != nil {
			return fmt.Errorf("position %s: %w", cfg.Position, err)
		}
		s.next = p.Seq + 1
	}
	cols := []connect.Schema{
		{Type: connect.SchemaInt64, Field: "id"},
		{Type: connect.SchemaInt64, Optional: true, Field: "seq"},
		{Type: connect.SchemaString, Optional: true, Field: "name"},
		{Type: connect.SchemaInt32, Optional: true, Field: "qty"},
	}
	var err error
	if s.schemas[0], err = connect.NewEventSchema("pg.shop.items", cols, []string{"id"}); err != nil {
		return err
	}
	cols = append(cols, connect.Schema{Type: connect.SchemaString, Optional: true, Field: "note"})
	s.schemas[1], err = connect.NewEventSchema("pg.shop.items", cols, []string{"id"})
	return err
}

func (s *changesSource) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.interval):
	}
	var out []connect.Record
	for range s.batch {
		if s.max > 0 && s.next > s.max {
			break
		}
		seq := s.next
		s.next++
		c := changeAt(s.seed, seq, s.keys)
		row := connect.Row{{Name: "id", Value: c.id}, {Name: "seq", Value: int64(seq)}, {Name: "name", Value: c.name}, {Name: "qty", Value: int64(c.qty)}}
		sc := s.schemas[0]
		if seq >= e2eNoteFrom {
			sc = s.schemas[1]
			row = append(row, connect.Field{Name: "note", Value: "note " + strconv.FormatUint(seq, 10)})
		}
		ev := &connect.ChangeEvent{Op: c.op, Key: connect.Row{{Name: "id", Value: c.id}}, Schema: sc,
			Source: connect.SourceInfo{Version: "test", Connector: connect.ConnectorPostgres, Name: "pg", DB: "shop", TsMs: 1,
				Extra: connect.Row{{Name: "schema", Value: "shop"}, {Name: "table", Value: "items"}}}}
		ev.SetTime(time.Now())
		if c.op == connect.OpDelete {
			ev.Before = connect.Row{{Name: "id", Value: c.id}}
		} else {
			ev.After = row
		}
		r, err := connect.DebeziumJSON{Schemas: true}.Record("", ev)
		if err != nil {
			return nil, err
		}
		pos := connect.Position(fmt.Sprintf(`{"seq":%d}`, seq))
		if c.op == connect.OpDelete {
			out = append(out, r)
			r = connect.Tombstone(r)
		}
		r.Position = pos
		out = append(out, r)
	}
	return out, nil
}

func (s *changesSource) Ack(context.Context, connect.Position) error { return nil }
func (s *changesSource) Close(context.Context) error                 { return nil }
