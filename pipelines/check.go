package pipelines

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// crossCheck checks what relates the entries of the files to each other:
// pipeline, source and sink names and consumer groups are unique, no topic
// is defined twice, no two connectors hold one exclusive resource
// (connect.Param.Exclusive: the file a sink appends to), a plugin file is
// pinned to one sha256, every topic a sink reads is defined or produced, and all
// files use the same log. The files are those loaded together: one file, or
// the files of one directory.
func crossCheck(files []*file) ErrorList {
	var errs ErrorList
	add := func(r ref, hint, format string, args ...any) {
		errs = append(errs, &Error{Pos: r.pos, Path: r.path, Message: fmt.Sprintf(format, args...), Hint: hint})
	}

	// unique reports each name refs gives twice, saying where it was
	// first: "at 4:12", or for a source's or sink's name "by sink out at
	// 4:12", naming the other file and its pipeline when that is another.
	unique := func(refs func(*file) []ref, format, hint string) {
		type firstRef struct {
			ref
			pipeline string
		}
		first := make(map[string]firstRef)
		for _, f := range files {
			for _, r := range refs(f) {
				if r.name == "" {
					continue
				}
				if prev, dup := first[r.name]; dup {
					switch {
					case r.defaulted && prev.defaulted:
						// Two sinks of the same name: reported as such.
					case r.pos == prev.pos:
						add(r, hint, "%q is used twice: the same anchored entry (*alias) appears twice", r.name)
					default:
						at := where(prev.pos, r.pos)
						if prev.owner != "" {
							of := ""
							if prev.pos.File != r.pos.File {
								of = " of pipeline " + prev.pipeline
							}
							at = "by " + ownerKind(prev.path) + " " + prev.owner + of + " " + at
						}
						add(r, hint, format, r.name, at)
					}
					continue
				}
				first[r.name] = firstRef{r, f.p.Name}
			}
		}
	}
	unique(func(f *file) []ref { return []ref{f.name} },
		"pipeline name %q is already used %s", "pipeline names must be unique across the files of a directory")
	unique(func(f *file) []ref { return f.conns },
		"name %q is already used %s", "a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them")
	unique(func(f *file) []ref { return f.groups },
		"consumer group %q is already used %s", "two sinks in one group split its partitions, each skipping the records the other was given: give each sink a group of its own (group:)")
	unique(func(f *file) []ref { return f.topics },
		"topic %q is already defined %s", "define each topic once")

	claimed := make(map[string]claimRef)
	for _, f := range files {
		for _, c := range f.claims {
			prev, dup := claimed[c.Key+"\x00"+c.Value]
			if !dup {
				claimed[c.Key+"\x00"+c.Value] = c
				continue
			}
			p := claimProblem(c.Claim, prev.Owner)
			add(c.ref, p.Hint, "%s %s", p.Message, where(prev.pos, c.pos))
		}
	}

	pinned := make(map[string]pinRef)
	for _, f := range files {
		for _, r := range f.pins {
			prev, dup := pinned[r.name]
			switch {
			case !dup:
				pinned[r.name] = r
			case prev.sum != r.sum:
				add(r.ref, "the pipelines loaded together share their plugins: pin each file to one sum",
					"plugin file %q is pinned to another sha256 %s", r.name, where(prev.pos, r.pos))
			}
		}
	}

	var timeout *ref // the first plugins.call_timeout
	for _, f := range files {
		switch r := f.callTimeout; {
		case r == nil:
		case timeout == nil:
			timeout = r
		case r.name != timeout.name:
			add(*r, "the pipelines loaded together share their plugins: set one call_timeout, or leave it out of all but one file",
				"plugins.call_timeout %s differs from %s %s", r.name, timeout.name, where(timeout.pos, r.pos))
		}
	}

	known := make(map[string]bool)
	anyTopic := false
	for _, f := range files {
		for _, r := range f.topics {
			known[r.name] = true
		}
		for _, r := range f.produced {
			if !isTemplate(r.name) {
				known[r.name] = true
			}
		}
		anyTopic = anyTopic || f.anyTopic
	}
	if !anyTopic {
		choices := make([]string, 0, len(known))
		for t := range known {
			choices = append(choices, t)
		}
		sort.Strings(choices)
		for _, f := range files {
			for _, r := range f.reads {
				if !known[r.name] {
					add(r, choicesHint(r.name, "topics", choices),
						"topic %q is not defined under topics and no source writes it", r.name)
				}
			}
		}
	}

	for _, f := range files[min(1, len(files)):] {
		first := files[0].p.Log
		l := f.p.Log
		if l.Backend != first.Backend || l.Dir != first.Dir || !reflect.DeepEqual(l.Kafka, first.Kafka) {
			errs = append(errs, &Error{
				Pos:     f.log,
				Path:    "log",
				Message: fmt.Sprintf("log settings differ from those of %s", files[0].p.File),
				Hint:    "the pipelines of a directory share one log: give every file the same backend, dir and kafka settings",
			})
		}
	}
	return errs
}

// ownerKind says what holds the name at path: "source" or "sink".
func ownerKind(path string) string {
	if strings.HasPrefix(path, "sources") {
		return "source"
	}
	return "sink"
}

// where says where p is, as seen from an error at from: line:column in the
// same file, file:line:column in another.
func where(p, from Pos) string {
	if p.File == from.File && p.Line > 0 {
		return fmt.Sprintf("at %d:%d", p.Line, p.Column)
	}
	return "in " + p.String()
}
