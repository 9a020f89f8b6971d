// Package cdc holds what the change-data-capture sources (postgres, mysql)
// share beyond the connect API: for now, how Debezium's signals name the
// tables they act on.
package cdc

import (
	"errors"
	"fmt"
	"regexp"
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
