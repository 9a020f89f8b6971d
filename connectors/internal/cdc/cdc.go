// Package cdc holds what the change-data-capture sources (postgres, mysql)
// share beyond the connect API: for now, how Debezium's signals name the
// tables they act on.
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
