// Package jsonl is the connector of the example jsonl plugin: a sink that
// appends each record's value as one line to a file, fsync'ed before Write
// returns.
//
// It is an ordinary connect.Sink, in a package of its own: the plugin's main
// only serves it, and the same code can be compiled into a worker or a test
// as a built-in connector (bench/plugins does, to measure the plugin
// boundary).
package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/connect"
)

// Connector describes the jsonl sink. The code is what a built-in sink
// would be: the plugin's main only serves it.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        "jsonl",
		Kind:        connect.KindSink,
		Version:     "0.1.0",
		Description: "Appends each record's value as one line to a file, fsync'ed before the write is acknowledged.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "path", Type: connect.TypeString, Required: true,
				Description: "File to append to; created with its directory when missing."},
		}},
		NewSink: func() connect.Sink { return &Sink{} },
	}
}

// Sink appends values to a file. Tombstones (nil values) are skipped; a
// value holding a newline is a bad record, since it would not be one line.
type Sink struct {
	path string
	f    *os.File
	buf  bytes.Buffer
}

var _ connect.Sink = (*Sink)(nil)

// Open opens the file for appending.
func (s *Sink) Open(_ context.Context, cfg connect.Config) error {
	path, err := cfg.String("path")
	if err != nil {
		return fmt.Errorf("jsonl config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	s.path, s.f = path, f
	return nil
}

// Write appends the batch with one write and fsyncs the file. Records
// before a bad one are written and synced first, and the error says which
// one is bad.
func (s *Sink) Write(ctx context.Context, records []connect.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.buf.Reset()
	var bad error
	for i, r := range records {
		if r.IsTombstone() {
			continue
		}
		if bytes.ContainsAny(r.Value, "\r\n") {
			bad = connect.BadRecordAt(i, fmt.Errorf("value of %s/%d@%d holds a line break", r.Topic, r.Partition, r.Offset))
			break
		}
		s.buf.Write(r.Value)
		s.buf.WriteByte('\n')
	}
	if s.buf.Len() > 0 {
		if _, err := s.f.Write(s.buf.Bytes()); err != nil {
			return fmt.Errorf("write %s: %w", s.path, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", s.path, err)
		}
	}
	return bad
}

// Close closes the file; every acknowledged write is already synced.
func (s *Sink) Close(context.Context) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}
