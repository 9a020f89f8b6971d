// Package cdc holds what the change-data-capture sources (postgres, mysql)
// share beyond the connect API: how Debezium's signals name the tables
// they act on, and which operations skipped.operations leaves out.
package cdc

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// MatchCollection compiles a signal's data-collection, a table name or a
// regular expression that must match a whole captured name, as Debezium
// reads them.
func MatchCollection(pattern string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + pattern + ")$")
}

// CheckCollections refuses the data-collections of an execute-snapshot
// signal that are not valid patterns or match none of the captured tables,
// all at once, each wrapping connect.ErrBadSignal, so that whoever sent
// the signal learns it (the worker answers 400).
func CheckCollections(patterns, captured []string) error {
	var errs []error
	for _, p := range patterns {
		re, err := MatchCollection(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("execute snapshot: %q is not a table name nor a regular expression: %v: %w", p, err, connect.ErrBadSignal))
			continue
		}
		matched := false
		for _, t := range captured {
			if re.MatchString(t) {
				matched = true
				break
			}
		}
		if !matched {
			errs = append(errs, fmt.Errorf("execute snapshot: %q matches no captured table (this source captures %s): %w",
				p, strings.Join(captured, ", "), connect.ErrBadSignal))
		}
	}
	return errors.Join(errs...)
}

// NewTables returns the captured tables that the data-collections of an
// execute-snapshot signal name and that are not in the snapshot already
// (have), in captured order within each pattern, each once. A pattern that
// is not valid or matches nothing is reported to skip (a signal-table row
// has nobody to answer) and left out.
func NewTables(patterns, captured, have []string, skip func(pattern, why string)) []string {
	var add []string
	for _, p := range patterns {
		re, err := MatchCollection(p)
		if err != nil {
			skip(p, fmt.Sprintf("not a table name nor a regular expression: %v", err))
			continue
		}
		matched := false
		for _, t := range captured {
			if !re.MatchString(t) {
				continue
			}
			matched = true
			if !slices.Contains(have, t) && !slices.Contains(add, t) {
				add = append(add, t)
			}
		}
		if !matched {
			skip(p, "no captured table matches")
		}
	}
	return add
}

// Send hands a signal request to a source's streaming loop through ch,
// which the loop reads between transactions. streaming says whether the
// source is open and streams (an initial_only source never does); done is
// closed when the source closes; source names it in errors.
func Send[R any](ctx context.Context, ch chan<- R, done <-chan struct{}, streaming bool, source string, r R) error {
	if ch == nil || !streaming {
		return fmt.Errorf("incremental snapshots need a streaming source: this one is not open, or only snapshots (snapshot.mode=initial_only)")
	}
	select {
	case ch <- r:
		return nil
	case <-done:
		return fmt.Errorf("the %s source is closed", source)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SkippedOpsDefault is the default of skipped.operations, as in Debezium
// 2.x: truncates are not emitted (a truncate event has no key, which a
// compacted topic refuses).
const SkippedOpsDefault = "t"

// SkippedOpsHelp describes skipped.operations for a connector's spec.
const SkippedOpsHelp = "Change events not to emit, as Debezium's skipped.operations: any of c (insert), u (update), d (delete, with its tombstone), t (truncate); none emits them all. " +
	"Snapshot reads (r) are always emitted. The default skips truncates, whose events have no key: a compacted topic (cleanup.policy=compact) refuses them."

// SkippedOps is the set of change operations a source does not emit
// (Debezium's skipped.operations).
type SkippedOps struct{ c, u, d, t bool }

// ParseSkippedOps reads the values of skipped.operations: c, u, d and t,
// or none alone (an empty list is none too).
func ParseSkippedOps(values []string) (SkippedOps, error) {
	var s SkippedOps
	for _, v := range values {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "c":
			s.c = true
		case "u":
			s.u = true
		case "d":
			s.d = true
		case "t":
			s.t = true
		case "none":
			if len(values) != 1 {
				return SkippedOps{}, fmt.Errorf("none cannot be combined with other operations (%s)", strings.Join(values, ","))
			}
		default:
			return SkippedOps{}, fmt.Errorf("%q: give any of c, u, d, t, or none", v)
		}
	}
	return s, nil
}

// Skips reports whether events of op are not emitted.
func (s SkippedOps) Skips(op connect.Op) bool {
	switch op {
	case connect.OpCreate:
		return s.c
	case connect.OpUpdate:
		return s.u
	case connect.OpDelete:
		return s.d
	case connect.OpTruncate:
		return s.t
	}
	return false
}
