// Command recorder is a plugin for the plugins package's tests: a source
// that implements connect.DurableNotifier and connect.TailRecoverer and
// writes every call the worker makes to it, one line each, to the file its
// "events" setting names, so that a test can check their order:
//
//	open <pos>|-                     Open, with the stored position
//	topics                           TailTopics
//	tail <topic> <part> <off> <val>  one record handed to RecoverTail
//	durable <pos>                    Durable
//	ack <pos>                        Ack
//	crash <pos>                      just before it SIGKILLs itself
//	close                            Close
//
// It counts 1, 2, 3, ... from the stored position on, batch records a
// Read, the last of each carrying the position (the number). With crash_at
// set, the first Durable of a position at or past it SIGKILLs the process
// (once: a file beside the events file remembers it), leaving records
// durable in the log whose position was never stored. With durable_error
// set, the first Durable of a position at or past durable_error_at returns
// that error.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins"
)

func main() {
	plugins.Serve(connect.Connector{
		Name: "recorder", Kind: connect.KindSource, Version: "0.0.1",
		Description: "A counting source that records the worker's calls.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "events", Type: connect.TypeString, Required: true, Description: "The file the calls are appended to."},
			{Name: "batch", Type: connect.TypeInt, Default: "3", Description: "Records a Read."},
			{Name: "crash_at", Type: connect.TypeInt, Default: "0", Description: "SIGKILL in the first Durable at or past this position (0: never)."},
			{Name: "durable_error", Type: connect.TypeString, Enum: []string{"none", "retryable", "fatal"}, Default: "none",
				Description: "What the first Durable at or past durable_error_at returns."},
			{Name: "durable_error_at", Type: connect.TypeInt, Default: "0", Description: "Where Durable fails, once (0: never)."},
		}},
		NewSource: func() connect.Source { return &source{} },
	})
}

type source struct {
	batch, crashAt, errAt int64
	errKind               string
	crashed               string // the file that says the crash happened
	errDone               bool   // Durable returned durable_error; Durable's only

	mu     sync.Mutex // guards events
	events *os.File

	next int64 // the next number; Read's only
}

var (
	_ connect.DurableNotifier = (*source)(nil)
	_ connect.TailRecoverer   = (*source)(nil)
)

func (s *source) record(format string, args ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.events, format+"\n", args...); err != nil {
		return fmt.Errorf("record an event: %w", err)
	}
	return nil
}

func (s *source) Open(_ context.Context, cfg connect.Config) error {
	path, err := cfg.String("events")
	if err != nil {
		return err
	}
	batch, err := cfg.Int("batch")
	if err != nil {
		return err
	}
	if s.crashAt, err = cfg.Int("crash_at"); err != nil {
		return err
	}
	if s.errKind, err = cfg.String("durable_error"); err != nil {
		return err
	}
	if s.errAt, err = cfg.Int("durable_error_at"); err != nil {
		return err
	}
	s.batch, s.crashed = batch, path+".crashed"
	if s.events, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fmt.Errorf("open the events file: %w", err)
	}
	s.next = 1
	stored := "-"
	if cfg.Position != nil {
		n, err := strconv.ParseInt(string(cfg.Position), 10, 64)
		if err != nil {
			return fmt.Errorf("stored position %q: %w", cfg.Position, err)
		}
		s.next, stored = n+1, string(cfg.Position)
	}
	return s.record("open %s", stored)
}

func (s *source) TailTopics() []string {
	_ = s.record("topics")
	return []string{""} // the topic the pipeline configures
}

func (s *source) RecoverTail(_ context.Context, recs []connect.Record) error {
	for _, r := range recs {
		if err := s.record("tail %s %d %d %s", r.Topic, r.Partition, r.Offset, r.Value); err != nil {
			return err
		}
	}
	return nil
}

func (s *source) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(2 * time.Millisecond):
	}
	recs := make([]connect.Record, s.batch)
	for i := range recs {
		recs[i].Value = []byte(strconv.FormatInt(s.next, 10))
		s.next++
	}
	recs[len(recs)-1].Position = connect.Position(recs[len(recs)-1].Value)
	return recs, nil
}

func (s *source) Durable(_ context.Context, pos connect.Position) error {
	if err := s.record("durable %s", pos); err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(pos), 10, 64)
	if err != nil {
		return fmt.Errorf("durable position %q: %w", pos, err)
	}
	if s.crashAt > 0 && n >= s.crashAt {
		if _, err := os.Stat(s.crashed); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(s.crashed, nil, 0o644); err != nil {
				return err
			}
			_ = s.record("crash %s", pos)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // until the signal lands
		}
	}
	if s.errAt > 0 && n >= s.errAt && !s.errDone {
		s.errDone = true
		switch s.errKind {
		case "retryable":
			return connect.RetryAfter(time.Second, fmt.Errorf("durable %s: not now", pos))
		case "fatal":
			return fmt.Errorf("durable %s: broken", pos)
		}
	}
	return nil
}

func (s *source) Ack(_ context.Context, pos connect.Position) error {
	return s.record("ack %s", pos)
}

func (s *source) Close(context.Context) error {
	if s.events == nil {
		return nil
	}
	err := s.record("close")
	return errors.Join(err, s.events.Close())
}
