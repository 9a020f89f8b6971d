package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// runSource runs a source task until soft ends (clean stop) or it fails:
// read → transform → append durably → store position → Ack.
func (r *runner) runSource(hard, soft context.Context, cfg connect.Config, c chain) error {
	src := r.conn.NewSource()
	if err := src.Open(soft, cfg); err != nil {
		if soft.Err() != nil {
			return nil
		}
		return fmt.Errorf("open source %s: %w", r.spec.Name, err)
	}
	defer func() {
		if err := src.Close(context.WithoutCancel(hard)); err != nil {
			r.logger.Warn("close source", "error", err)
		}
	}()
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
		start := time.Now()
		m.recordsRead.WithLabelValues(r.spec.Name).Add(float64(len(recs)))
		var pos connect.Position
		out := make([]connect.Record, 0, len(recs))
		for _, rec := range recs {
			if rec.Position != nil {
				pos = rec.Position
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
			if err := r.w.opts.Backend.Produce(hard, out); err != nil {
				return fmt.Errorf("append records of source %s: %w", r.spec.Name, err)
			}
			m.recordsWritten.WithLabelValues(r.spec.Name).Add(float64(len(out)))
		}
		if pos != nil {
			if err := r.w.offsets.Put(hard, r.spec.Pipeline, r.spec.Name, pos); err != nil {
				return err
			}
			if err := src.Ack(hard, pos); err != nil {
				if !connect.IsRetryable(err) {
					return fmt.Errorf("ack position of source %s: %w", r.spec.Name, err)
				}
				r.logger.Warn("ack failed; the next ack covers it", "error", err)
			}
		}
		m.batchSeconds.WithLabelValues(r.spec.Name).Observe(time.Since(start).Seconds())
	}
}
