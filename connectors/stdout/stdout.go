// Package stdout is a sink that prints records, for demos and debugging.
//
// With format=value (the default) it prints each record's value as it is,
// followed by a newline; tombstones (records with a nil value) print
// nothing. With format=json it prints one JSON object per record,
//
//	{"topic":"web.tracking","partition":0,"offset":42,
//	 "timestamp":"2026-01-02T15:04:05.123Z","key":"user-7","value":{...}}
//
// in which the key and the value are written as JSON when they hold valid
// JSON (in UTF-8), else as JSON strings, and a tombstone's value is null.
//
// Each batch is printed with a single write, so batches of concurrent sinks
// do not interleave line by line on os.Stdout.
package stdout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/jsonline"
)

// Name is the connector's name in pipeline files.
const Name = "stdout"

// version is the connector's version.
const version = "0.1.0"

// The formats a Sink prints in.
const (
	FormatValue = "value"
	FormatJSON  = "json"
)

// maxKeptBuffer is the largest batch buffer kept between writes.
const maxKeptBuffer = 4 << 20

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the stdout sink.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSink,
		Version:     version,
		Description: "Prints each record to standard output: its value, or a JSON object with its topic, partition, offset, timestamp, key and value.",
		Spec:        spec(),
		NewSink:     func() connect.Sink { return NewSink(nil) },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "format", Type: connect.TypeString, Default: FormatValue, Enum: []string{FormatValue, FormatJSON},
			Description: "value prints each value as it is, one per line; json prints one JSON object per record with its topic, partition, offset, timestamp, key and value."},
	}}
}

// Sink prints records to a writer.
type Sink struct {
	w      io.Writer
	format string
	buf    bytes.Buffer
	open   bool
}

var _ connect.Sink = (*Sink)(nil)

// NewSink returns a sink that prints to w, or to os.Stdout when w is nil.
// Each Write makes one call to w.Write.
func NewSink(w io.Writer) *Sink { return &Sink{w: w} }

// Open reads the format.
func (s *Sink) Open(_ context.Context, cfg connect.Config) error {
	cfg.Spec = spec()
	format, err := cfg.String("format")
	if err != nil {
		return fmt.Errorf("stdout sink config: %w", err)
	}
	s.format = format
	if s.w == nil {
		s.w = os.Stdout
	}
	s.open = true
	return nil
}

// Write prints the batch with one write.
func (s *Sink) Write(ctx context.Context, records []connect.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.open {
		return errors.New("stdout sink: write to a sink that is not open")
	}
	s.buf.Reset()
	for i := range records {
		r := &records[i]
		if s.format == FormatJSON {
			jsonline.Append(&s.buf, r, true)
			continue
		}
		if r.IsTombstone() {
			continue
		}
		s.buf.Write(r.Value)
		s.buf.WriteByte('\n')
	}
	defer func() {
		if s.buf.Cap() > maxKeptBuffer {
			s.buf = bytes.Buffer{}
		}
	}()
	if s.buf.Len() == 0 {
		return nil
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return fmt.Errorf("print records: %w", err)
	}
	return nil
}

// Close does not close the writer: os.Stdout outlives the sink.
func (s *Sink) Close(context.Context) error {
	s.open = false
	return nil
}
