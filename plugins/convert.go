package plugins

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// Conversions between the connect types and their wire messages. Nil and
// empty byte slices stay distinct across the boundary (a nil value is a
// tombstone, a nil position is not a resume point): the messages declare
// those fields optional, which protobuf-go maps to a nil or non-nil slice.

func toPBRecords(recs []connect.Record) []*pluginpb.Record {
	out := make([]*pluginpb.Record, len(recs))
	msgs := make([]pluginpb.Record, len(recs)) // one allocation for the batch
	for i := range recs {
		r := &recs[i]
		m := &msgs[i]
		m.Key = r.Key
		m.Value = r.Value
		m.Topic = r.Topic
		m.Partition = r.Partition
		m.Offset = r.Offset
		m.OriginalTopic = r.OriginalTopic
		m.OriginalPartition = r.OriginalPartition
		m.OriginalOffset = r.OriginalOffset
		m.Position = r.Position
		if !r.Timestamp.IsZero() {
			s := r.Timestamp.Unix()
			m.TsSeconds = &s
			m.TsNanos = int32(r.Timestamp.Nanosecond())
		}
		if len(r.Headers) > 0 {
			hs := make([]pluginpb.Header, len(r.Headers))
			m.Headers = make([]*pluginpb.Header, len(r.Headers))
			for j, h := range r.Headers {
				hs[j].Key, hs[j].Value = h.Key, h.Value
				m.Headers[j] = &hs[j]
			}
		}
		out[i] = m
	}
	return out
}

func fromPBRecords(msgs []*pluginpb.Record) []connect.Record {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]connect.Record, len(msgs))
	for i, m := range msgs {
		r := &out[i]
		r.Key = m.Key
		r.Value = m.Value
		r.Topic = m.Topic
		r.Partition = m.Partition
		r.Offset = m.Offset
		r.OriginalTopic = m.OriginalTopic
		r.OriginalPartition = m.OriginalPartition
		r.OriginalOffset = m.OriginalOffset
		if m.Position != nil {
			r.Position = connect.Position(m.Position)
		}
		if m.TsSeconds != nil {
			r.Timestamp = time.Unix(*m.TsSeconds, int64(m.TsNanos))
		}
		if len(m.Headers) > 0 {
			r.Headers = make([]connect.Header, len(m.Headers))
			for j, h := range m.Headers {
				r.Headers[j] = connect.Header{Key: h.Key, Value: h.Value}
			}
		}
	}
	return out
}

func toPBConfig(c connect.Config) *pluginpb.Config {
	return &pluginpb.Config{
		Pipeline:  c.Pipeline,
		Connector: c.Connector,
		Task:      int64(c.Task),
		Values:    c.Values,
		Position:  c.Position,
	}
}

func fromPBConfig(m *pluginpb.Config, spec connect.Spec) connect.Config {
	c := connect.Config{Spec: spec}
	if m == nil {
		return c
	}
	c.Pipeline, c.Connector, c.Task, c.Values = m.Pipeline, m.Connector, int(m.Task), m.Values
	if m.Position != nil {
		c.Position = connect.Position(m.Position)
	}
	return c
}

// toPBParams describes a spec's parameters, with their constraints. The
// spec's Check and Redact are code, not data: Check stays in the plugin
// (its Open checks), and Redact is called across the boundary (Redact).
func toPBParams(s connect.Spec) []*pluginpb.Param {
	out := make([]*pluginpb.Param, len(s.Params))
	for i, p := range s.Params {
		out[i] = &pluginpb.Param{
			Name: p.Name, Type: string(p.Type), Required: p.Required, Default: p.Default,
			Secret: p.Secret, Enum: p.Enum, Description: p.Description,
			Min: p.Min, Max: p.Max, Positive: p.Positive, Format: string(p.Format), Exclusive: p.Exclusive,
		}
	}
	return out
}

// fromPBParams rebuilds a plugin's spec. A Format this build of connect
// does not know (a plugin built against a newer one) is dropped and
// returned in unknown, so that the host checks less rather than refusing
// every value of the parameter: the plugin's Open still checks.
func fromPBParams(ps []*pluginpb.Param) (s connect.Spec, unknown []string) {
	s = connect.Spec{Params: make([]connect.Param, len(ps))}
	for i, p := range ps {
		s.Params[i] = connect.Param{
			Name: p.Name, Type: connect.ParamType(p.Type), Required: p.Required, Default: p.Default,
			Secret: p.Secret, Enum: p.Enum, Description: p.Description,
			Min: p.Min, Max: p.Max, Positive: p.Positive, Format: connect.Format(p.Format), Exclusive: p.Exclusive,
		}
		if f := s.Params[i].Format; f != "" && !knownFormat(f) {
			s.Params[i].Format = ""
			unknown = append(unknown, fmt.Sprintf("%s (format %q)", p.Name, f))
		}
	}
	return s, unknown
}

// knownFormat reports whether this build of connect checks values of
// format f: it answers "spec: unknown format" for one it does not know,
// whatever the value.
func knownFormat(f connect.Format) bool {
	err := connect.Param{Name: "probe", Type: connect.TypeString, Format: f}.Check("")
	return err == nil || err.Error() != fmt.Sprintf("spec: unknown format %q", f)
}

// toPBError classifies a connector's error for the wire; nil for nil.
func toPBError(err error) *pluginpb.Error {
	if err == nil {
		return nil
	}
	e := &pluginpb.Error{Message: err.Error(), Index: -1, Attempts: int64(connect.Attempts(err))}
	var bre *connect.BadRecordError
	var re *connect.RetryableError
	switch {
	case connect.IsStopping(err): // first, as the worker asks it first
		e.Kind = pluginpb.Error_STOPPING
	case errors.As(err, &bre):
		e.Kind = pluginpb.Error_BAD_RECORD
		e.Index = int64(bre.Index)
	case connect.IsPermanent(err): // before Retryable: permanent wins
		e.Kind = pluginpb.Error_PERMANENT
	case errors.As(err, &re):
		e.Kind = pluginpb.Error_RETRYABLE
		e.RetryAfterNs = int64(re.After)
	case errors.Is(err, context.Canceled):
		e.Kind = pluginpb.Error_CANCELED
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = pluginpb.Error_DEADLINE
	}
	return e
}

// fromPBError rebuilds a connector's error with the markers the worker
// branches on (BadRecord, Permanent, Retryable, WithAttempts, context
// errors, ErrStopping); nil for nil.
func fromPBError(e *pluginpb.Error) error {
	if e == nil {
		return nil
	}
	base := &remoteError{msg: e.Message}
	var err error = base
	if e.Attempts > 0 && e.Attempts <= math.MaxInt32 {
		err = connect.WithAttempts(int(e.Attempts), base)
	}
	switch e.Kind {
	case pluginpb.Error_BAD_RECORD:
		return connect.BadRecordAt(int(e.Index), err)
	case pluginpb.Error_PERMANENT:
		return connect.Permanent(err)
	case pluginpb.Error_RETRYABLE:
		return connect.RetryAfter(time.Duration(e.RetryAfterNs), err)
	case pluginpb.Error_CANCELED:
		base.wrapped = context.Canceled
	case pluginpb.Error_DEADLINE:
		base.wrapped = context.DeadlineExceeded
	case pluginpb.Error_STOPPING:
		base.wrapped = connect.ErrStopping
	}
	return err
}

// remoteError is an error returned by the connector in the plugin process:
// its message, and the context error it was, if any.
type remoteError struct {
	msg     string
	wrapped error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.wrapped }
