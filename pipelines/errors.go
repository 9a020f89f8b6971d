package pipelines

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a pipeline file. Line and Column count from 1;
// Column counts characters, not bytes. A zero Line means the position is the
// file as a whole, a zero Column the line as a whole.
type Pos struct {
	File   string
	Line   int
	Column int
}

// String formats p as file:line:column, leaving out the parts that are zero.
func (p Pos) String() string {
	s := p.File
	if p.Line > 0 {
		s += fmt.Sprintf(":%d", p.Line)
		if p.Column > 0 {
			s += fmt.Sprintf(":%d", p.Column)
		}
	}
	return s
}

// Error is one problem in a pipeline file: where it is, what is wrong and
// what would be right.
type Error struct {
	Pos
	// Path names the offending value inside the file, e.g.
	// "sinks[0].errors.tolerance"; empty for problems with the file itself.
	Path string
	// Message says what is wrong and what was expected.
	Message string
	// Hint lists the valid choices and, when one is close to what was
	// written, suggests it ("did you mean "topics"? valid keys: ...").
	Hint string
}

// Error formats e as "file:line:col: path: message; hint".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// ErrorList holds every problem found in one pipeline file, or in all files
// of a directory, sorted by file and position. The loaders return an
// ErrorList as their error; use errors.As to reach the entries.
type ErrorList []*Error

// Error prints one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the entries, so errors.As finds a single *Error too.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sorted orders l by file, line and column (keeping the order of problems
// found at the same place) and drops repeats of the same problem at the same
// place, which appear when an anchored value (&name, *name) is used in
// several places.
func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	out := l[:0]
	seen := make(map[string]bool, len(l))
	for _, e := range l {
		k := e.Pos.String() + "\x00" + e.Message + "\x00" + e.Hint
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}
