// Package counter is the connector of the example counter plugin: a
// source that emits {"n": 1}, {"n": 2}, … at a configurable rate. n is the
// record's source position, so after a restart the source continues after
// the last n the worker stored.
//
// It is an ordinary connect.Source, in a package of its own: the plugin's
// main only serves it, and the same code can be compiled into a worker or a
// test as a built-in connector (bench/plugins does, to measure the plugin
// boundary).
package counter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// maxBatch bounds the records of one Read.
const maxBatch = 1000

// Connector describes the counter source. The code is what a built-in
// source would be: the plugin's main only serves it.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        "counter",
		Kind:        connect.KindSource,
		Version:     "0.1.0",
		Description: `Emits {"n": 1}, {"n": 2}, … at a set rate; n is the source position, so it continues after a restart.`,
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "rate", Type: connect.TypeFloat, Default: "10",
				Description: "Records per second; 0 emits as fast as the worker reads."},
			{Name: "pad", Type: connect.TypeSize, Default: "0",
				Description: `Adds a field "pad" of this many bytes to each value, for benchmarks with larger records.`},
			{Name: "max", Type: connect.TypeInt, Default: "0",
				Description: "The last n to emit; after it the source is idle. 0: no end."},
		}},
		NewSource: func() connect.Source { return &Source{} },
	}
}

// Source emits the numbers. Read and Ack may run concurrently: Read owns
// next and due, and Ack touches nothing.
type Source struct {
	rate  float64
	pad   string
	max   int64     // the last n; 0: no end
	next  int64     // the n of the next record
	start time.Time // when n = first was due
	first int64
}

var _ connect.Source = (*Source)(nil)

// Open reads the settings and resumes after the stored position.
func (s *Source) Open(_ context.Context, cfg connect.Config) error {
	rate, err := cfg.Float("rate")
	if err != nil {
		return fmt.Errorf("counter config: %w", err)
	}
	if rate < 0 {
		return fmt.Errorf("counter config: rate: %v is negative", rate)
	}
	pad, err := cfg.Size("pad")
	if err != nil {
		return fmt.Errorf("counter config: %w", err)
	}
	if pad > 16<<20 {
		return fmt.Errorf("counter config: pad: %d bytes is more than 16MiB", pad)
	}
	last, err := cfg.Int("max")
	if err != nil {
		return fmt.Errorf("counter config: %w", err)
	}
	if last < 0 {
		return fmt.Errorf("counter config: max: %d is negative", last)
	}
	s.rate, s.pad, s.max = rate, strings.Repeat("x", int(pad)), last
	s.next = 1
	if cfg.Position != nil {
		last, err := strconv.ParseInt(string(cfg.Position), 10, 64)
		if err != nil {
			return fmt.Errorf("counter: stored position %q is not a number", cfg.Position)
		}
		s.next = last + 1
	}
	s.first, s.start = s.next, time.Now()
	return nil
}

// Read waits until the next record is due and returns every record due by
// then (at most maxBatch, and none after max).
func (s *Source) Read(ctx context.Context) ([]connect.Record, error) {
	if s.max > 0 && s.next > s.max {
		<-ctx.Done() // the end: nothing more, ever
		return nil, ctx.Err()
	}
	n := maxBatch
	if s.rate > 0 {
		due := s.start.Add(time.Duration(float64(s.next-s.first) / s.rate * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		n = int(float64(time.Since(s.start))/float64(time.Second)*s.rate) + 1 - int(s.next-s.first)
		n = min(max(n, 1), maxBatch)
	}
	if s.max > 0 {
		n = int(min(int64(n), s.max-s.next+1))
	}
	recs := make([]connect.Record, n)
	for i := range recs {
		pos := strconv.AppendInt(nil, s.next, 10)
		var v []byte
		if s.pad == "" {
			v = fmt.Appendf(nil, `{"n":%d}`, s.next)
		} else {
			v = fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, s.next, s.pad)
		}
		recs[i] = connect.Record{Value: v, Position: pos, Timestamp: time.Now()}
		s.next++
	}
	return recs, nil
}

// Ack has nothing to acknowledge upstream: the position is all the state.
func (s *Source) Ack(context.Context, connect.Position) error { return nil }

// Close has nothing to release.
func (s *Source) Close(context.Context) error { return nil }
