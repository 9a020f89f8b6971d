package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// sourceWindow is how many appended batches may wait for their fsync while
// the source reads the next one. One fsync then covers several batches.
const sourceWindow = 8

// inflight is a batch written to the log and not yet known durable.
type inflight struct {
	wait  func(context.Context) error
	pos   connect.Position
	start time.Time
}

// runSource runs a source task until soft ends (clean stop) or it fails:
// read → transform → append → (once durable) store position → Ack. Appends
// keep their order; a committer goroutine waits for durability, so the
// next batch is read while the previous ones are fsync'ed.
func (r *runner) runSource(hard, soft context.Context, cfg connect.Config, c chain) error {
	src := r.conn.NewSource()
	if err := src.Open(soft, cfg); err != nil {
		if soft.Err() != nil {
			return nil
		}
		return fmt.Errorf("open source %s: %w", r.spec.Name, err)
	}
	r.setReporter(src)
	defer func() {
		r.setReporter(nil)
		if err := src.Close(context.WithoutCancel(hard)); err != nil {
			r.logger.Warn("close source", "error", err)
		}
	}()
	window := make(chan inflight, sourceWindow)
	committed := make(chan error, 1)
	rctx, stopReading := context.WithCancel(soft)
	defer stopReading()
	go func() { committed <- r.commitSourcePositions(hard, src, window, stopReading) }()
	err := r.readSource(hard, rctx, src, c, window)
	close(window) // drain: the committer finishes every batch in flight
	if cerr := <-committed; err == nil {
		err = cerr
	}
	return err
}

// readSource is the reading half of a source task.
func (r *runner) readSource(hard, soft context.Context, src connect.Source, c chain, window chan<- inflight) error {
	r.setTaskState(StateRunning, "")
	m := r.w.metrics
	bo := backoff{initial: 100 * time.Millisecond, max: 10 * time.Second}
	for {
		if !r.waitWhilePaused(soft) {
			return nil
		}
		recs, err := src.Read(soft)
		if soft.Err() != nil {
			return nil // stop requested: whatever was read is not acked and comes again
		}
		if err != nil {
			if connect.IsRetryable(err) {
				m.errors.WithLabelValues(r.spec.Name, "read").Inc()
				if sleep(soft, bo.next()) != nil {
					return nil
				}
				continue
			}
			return fmt.Errorf("read from source %s: %w", r.spec.Name, err)
		}
		bo.reset()
		if len(recs) == 0 {
			continue
		}
		f := inflight{start: time.Now(), wait: func(context.Context) error { return nil }}
		m.recordsRead.WithLabelValues(r.spec.Name).Add(float64(len(recs)))
		out := make([]connect.Record, 0, len(recs))
		for _, rec := range recs {
			if rec.Position != nil {
				f.pos = rec.Position
			}
			if rec.Topic == "" {
				rec.Topic = r.spec.Topic
			}
			rec.Position = nil
			got, err := c.apply(rec)
			if err != nil {
				m.errors.WithLabelValues(r.spec.Name, "transform").Inc()
				return fmt.Errorf("source %s: %w", r.spec.Name, err)
			}
			out = append(out, got...)
		}
		if len(out) > 0 {
			// Appends use the hard context: a batch that was read is
			// finished even while stopping, so its position can be stored.
			wait, err := r.w.opts.Backend.Append(hard, out)
			if err != nil {
				return fmt.Errorf("append records of source %s: %w", r.spec.Name, err)
			}
			f.wait = wait
			m.recordsWritten.WithLabelValues(r.spec.Name).Add(float64(len(out)))
		}
		window <- f // blocks while sourceWindow batches wait for their fsync
	}
}

// commitSourcePositions is the committing half of a source task: for each
// batch, in order, it waits until the batch is durable; then it stores the
// newest position reached (once per burst, not per batch) and acks it.
// On a failure it calls stopReading and drains the window.
func (r *runner) commitSourcePositions(ctx context.Context, src connect.Source, window <-chan inflight, stopReading func()) error {
	m := r.w.metrics
	var pending connect.Position
	var failed error
	flush := func() error {
		if pending == nil {
			return nil
		}
		if err := r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, pending); err != nil {
			return err
		}
		if err := src.Ack(ctx, pending); err != nil {
			if !connect.IsRetryable(err) {
				return fmt.Errorf("ack position of source %s: %w", r.spec.Name, err)
			}
			r.logger.Warn("ack failed; the next ack covers it", "error", err)
		}
		pending = nil
		return nil
	}
	for f := range window {
		if failed != nil {
			continue // drain without storing anything past the failure
		}
		if err := f.wait(ctx); err != nil {
			failed = fmt.Errorf("append records of source %s: %w", r.spec.Name, err)
			stopReading()
			continue
		}
		m.batchSeconds.WithLabelValues(r.spec.Name).Observe(time.Since(f.start).Seconds())
		if f.pos != nil {
			pending = f.pos
		}
		if len(window) == 0 {
			if failed = flush(); failed != nil {
				stopReading()
			}
		}
	}
	if failed != nil {
		return failed
	}
	return flush()
}
