// Package generator is a source of synthetic web-tracking events, for demos,
// tests and benchmarks.
//
// Each event is a JSON object keyed by its user_id:
//
//	{"seq":1,"user_id":"user-123","event":"page_view",
//	 "properties":{"path":"/pricing","referrer":"https://www.google.com/"},
//	 "timestamp":"2026-01-02T15:04:05.123456789Z"}
//
// seq counts from 1 and is the source position ({"seq":N}), so it continues
// after a restart. Everything in an event but its timestamp is a function
// of (seed, seq) alone: the same seed gives the same event for the same seq,
// whether it is generated for the first time or again after a restart. The
// timestamp is the time the event was due under the configured rate (with
// rate 0, the time it was read), so that sinks can measure latency.
package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Name is the connector's name in pipeline files.
const Name = "generator"

// version is the connector's version.
const version = "0.1.0"

// maxValueSize bounds value.size, so that a typo cannot make every event a
// gigabyte.
const maxValueSize = 64 << 20

// defaultIdle is how long Read waits for an event before it returns an
// empty batch, so that the worker can heartbeat and react to pause or stop.
const defaultIdle = time.Second

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the generator source.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSource,
		Version:     version,
		Description: "Generates synthetic web-tracking events keyed by user_id, at a set rate, seeded and resumable by their seq.",
		Spec:        spec(),
		NewSource:   func() connect.Source { return &Source{} },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "rate", Type: connect.TypeFloat, Min: "0", Default: "1000",
			Description: "Events per second. 0 generates as fast as the worker reads."},
		{Name: "seed", Type: connect.TypeInt, Default: "42",
			Description: "Seed of the event contents: the same seed gives the same event for the same seq, also after a restart."},
		{Name: "users", Type: connect.TypeInt, Min: "1", Default: "1000",
			Description: "Number of distinct users: user_id is user-1 to user-N."},
		{Name: "batch.size", Type: connect.TypeInt, Min: "1", Max: "2147483647", Default: "500",
			Description: "Most events returned by one read."},
		{Name: "max.events", Type: connect.TypeInt, Min: "0", Default: "0",
			Description: "Stop after the event whose seq is this number, counted across restarts. 0 never stops."},
		{Name: "value.size", Type: connect.TypeSize, Default: "0",
			Description: "Pad each value with a \"pad\" field to exactly this many bytes (e.g. 1KiB for benchmarks); values already as long stay as they are. 0 adds no padding."},
	}}
}

// settings are the parsed configuration of a Source.
type settings struct {
	rate      float64 // events per second; 0: unlimited
	seed      int64
	users     uint64
	batchSize int
	maxEvents uint64 // 0: unlimited
	valueSize int    // 0: no padding
}

func parseSettings(cfg connect.Config) (settings, error) {
	var s settings
	var errs []error
	field := func(param, msg string) { errs = append(errs, connect.FieldError{Param: param, Message: msg}) }

	rate, err := cfg.Float("rate")
	switch {
	case err != nil:
		errs = append(errs, err)
	case !(rate >= 0) || math.IsInf(rate, 0):
		field("rate", fmt.Sprintf("%v is not a rate: give events per second, 0 or more", rate))
	}
	s.rate = rate
	if s.seed, err = cfg.Int("seed"); err != nil {
		errs = append(errs, err)
	}
	users, err := cfg.Int("users")
	switch {
	case err != nil:
		errs = append(errs, err)
	case users < 1:
		field("users", fmt.Sprintf("%d users: give at least 1", users))
	}
	s.users = uint64(max(users, 1))
	batch, err := cfg.Int("batch.size")
	switch {
	case err != nil:
		errs = append(errs, err)
	case batch < 1 || batch > math.MaxInt32:
		field("batch.size", fmt.Sprintf("%d: give a number from 1 to %d", batch, math.MaxInt32))
	}
	s.batchSize = int(min(max(batch, 1), math.MaxInt32))
	maxEvents, err := cfg.Int("max.events")
	switch {
	case err != nil:
		errs = append(errs, err)
	case maxEvents < 0:
		field("max.events", fmt.Sprintf("%d: give 0 (no limit) or more", maxEvents))
	}
	s.maxEvents = uint64(max(maxEvents, 0))
	size, err := cfg.Size("value.size")
	switch {
	case err != nil:
		errs = append(errs, err)
	case size > maxValueSize:
		field("value.size", fmt.Sprintf("%d bytes is more than the %d (64MiB) allowed", size, maxValueSize))
	}
	s.valueSize = int(min(size, maxValueSize))
	return s, errors.Join(errs...)
}

// Source generates events. Make one with Connector().NewSource or new(Source).
type Source struct {
	// Set by Open, then used by Read only.
	cfg    settings
	next   uint64 // seq of the next event
	pace   *bucket
	idle   time.Duration
	opened bool
	stamps stamper

	// acked is the seq of the last acknowledged event; Ack stores it
	// concurrently with Read.
	acked atomic.Uint64
}

var _ connect.Source = (*Source)(nil)

// Open parses the configuration and resumes after cfg.Position's seq, or
// starts at seq 1 when cfg.Position is nil.
func (s *Source) Open(_ context.Context, cfg connect.Config) error {
	cfg.Spec = spec()
	set, err := parseSettings(cfg)
	if err != nil {
		return fmt.Errorf("generator config: %w", err)
	}
	next := uint64(1)
	if cfg.Position != nil {
		last, err := parsePosition(cfg.Position)
		if err != nil {
			return fmt.Errorf("resume generator: %w", err)
		}
		if last == math.MaxUint64 {
			return fmt.Errorf("resume generator: position %s is the last possible seq", cfg.Position)
		}
		next = last + 1
		s.acked.Store(last)
	}
	s.cfg = set
	s.next = next
	if s.idle == 0 {
		s.idle = defaultIdle
	}
	if set.rate > 0 {
		// Forgive a debt of more than one second of events (or one batch),
		// so that after a pause the source catches up in a short burst
		// instead of a flood.
		burst := max(uint64(math.Ceil(set.rate)), uint64(set.batchSize))
		s.pace = newBucket(set.rate, burst, time.Now())
	}
	s.opened = true
	return nil
}

// Read returns the events due by now, at most batch.size of them. It blocks
// until at least one is due, for at most a second, after which it returns
// an empty batch; once max.events are generated it only returns empty
// batches.
func (s *Source) Read(ctx context.Context) ([]connect.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.opened {
		return nil, errors.New("generator: read before open")
	}
	limit := uint64(s.cfg.batchSize)
	if s.cfg.maxEvents > 0 {
		if s.next > s.cfg.maxEvents {
			return nil, s.sleep(ctx, s.idle)
		}
		limit = min(limit, s.cfg.maxEvents-s.next+1)
	}

	var n uint64
	var first time.Time // when the first event of the batch was due
	if s.pace == nil {
		n, first = limit, time.Now()
	} else {
		deadline := time.Now().Add(s.idle)
		for {
			now := time.Now()
			if n = min(s.pace.available(now), limit); n > 0 {
				break
			}
			wait := s.pace.dueAt(0).Sub(now)
			if left := deadline.Sub(now); wait > left {
				return nil, s.sleep(ctx, left)
			}
			if err := s.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}

	// The values, keys and positions of the batch are cut from two slabs,
	// two allocations instead of three per event. The worker owns the
	// records, so nothing here is reused. A value longer than its room
	// (unpadded and unusually long) grows the slab: the records before it
	// keep the old one.
	perValue := max(s.cfg.valueSize, 256)
	values := make([]byte, 0, int(n)*perValue)
	small := make([]byte, 0, int(n)*smallPerEvent)
	recs := make([]connect.Record, n)
	for i := range recs {
		seq := s.next + uint64(i)
		ts := first
		if s.pace != nil {
			ts = s.pace.dueAt(uint64(i))
		}
		ts = ts.UTC()
		ev := newEvent(s.cfg.seed, seq, s.cfg.users)
		start := len(values)
		values = ev.appendJSONStamped(values, s.stamps.stamp(ts), s.cfg.valueSize)
		value := values[start:len(values):len(values)]
		start = len(small)
		small = ev.appendUserID(small)
		key := small[start:len(small):len(small)]
		start = len(small)
		small = appendPosition(small, seq)
		pos := small[start:len(small):len(small)]
		recs[i] = connect.Record{Key: key, Value: value, Timestamp: ts, Position: pos}
	}
	if s.pace != nil {
		s.pace.take(n)
	}
	s.next += n
	return recs, nil
}

// sleep waits for d or until ctx is done.
func (s *Source) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Ack records the acknowledged seq; the generator has nobody upstream to
// tell.
func (s *Source) Ack(_ context.Context, pos connect.Position) error {
	seq, err := parsePosition(pos)
	if err != nil {
		return fmt.Errorf("generator ack: %w", err)
	}
	s.acked.Store(seq)
	return nil
}

// Acked returns the seq of the last acknowledged event (or the one resumed
// after), 0 when there is none.
func (s *Source) Acked() uint64 { return s.acked.Load() }

// Close releases nothing: the generator holds no resources.
func (s *Source) Close(context.Context) error {
	s.opened = false
	return nil
}

// smallPerEvent is the slab room for an event's key and position: a
// user_id of up to 25 bytes ("user-" and 20 digits) and a position.
const smallPerEvent = 26 + maxPositionLen

// maxPositionLen is the longest position: {"seq":} and 20 digits.
const maxPositionLen = 28

// appendPosition appends the position of the event with the given seq.
func appendPosition(b []byte, seq uint64) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '}')
}

// parsePosition returns the seq of a position written by position.
func parsePosition(pos connect.Position) (uint64, error) {
	var p struct {
		Seq *uint64 `json:"seq"`
	}
	if err := json.Unmarshal(pos, &p); err != nil {
		return 0, fmt.Errorf("position %q is not {\"seq\":N}: %w", pos, err)
	}
	if p.Seq == nil {
		return 0, fmt.Errorf("position %q has no seq: want {\"seq\":N}", pos)
	}
	return *p.Seq, nil
}
