package transform

import (
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// Transform changes one record on its way between a connector and the log.
//
// Apply returns the records that take r's place: none to drop it, usually
// one. It must not modify the slices of r (key, value, headers, position),
// which the caller may still hold; the records it returns may share them.
// An error caused by the record itself is an *Error marked with
// connect.BadRecord; the worker then dead-letters r or fails the task, as
// the pipeline's error tolerance says.
//
// The worker calls Apply from one task goroutine, one record at a time. The
// built-in transforms hold no state once built, so one instance may also
// be shared by several goroutines.
type Transform interface {
	Apply(r connect.Record) ([]connect.Record, error)
}

// Chain applies transforms in order: each record a transform returns goes
// through the rest of the chain. An empty chain returns r unchanged.
type Chain []Transform

var _ Transform = Chain(nil)

// Apply implements Transform. The first error stops the chain; it is
// returned as is, so a bad-record mark survives.
func (c Chain) Apply(r connect.Record) ([]connect.Record, error) {
	recs := []connect.Record{r}
	for _, t := range c {
		var next []connect.Record
		for _, rec := range recs {
			out, err := t.Apply(rec)
			if err != nil {
				return nil, err
			}
			next = append(next, out...)
		}
		if recs = next; len(recs) == 0 {
			return nil, nil
		}
	}
	return recs, nil
}

// Error is a record that a transform could not transform. Apply returns it
// wrapped by connect.BadRecord; errors.As finds it through the mark.
type Error struct {
	// Transform is the transform type, such as "mask_fields".
	Transform string
	// Field is the dotted path of the field involved, or "" when the
	// problem is not about one field.
	Field string
	// Err says what is wrong.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Transform)
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// badRecord returns an *Error for transform and field, marked as a bad
// record.
func badRecord(transform, field string, format string, args ...any) error {
	return connect.BadRecord(&Error{Transform: transform, Field: field, Err: fmt.Errorf(format, args...)})
}

// ConfigError lists the problems with the configuration of one transform.
type ConfigError struct {
	// Transform is the transform type.
	Transform string
	// Problems are the problems, each naming its parameter.
	Problems []connect.FieldError
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("transform ")
	b.WriteString(e.Transform)
	b.WriteString(": ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// fieldError is a problem with the parameter param, for transform
// constructors.
func fieldError(param, format string, args ...any) error {
	return connect.FieldError{Param: param, Message: fmt.Sprintf(format, args...)}
}
