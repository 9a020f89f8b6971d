package pipelines

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// Problem is one thing wrong with a source or sink that is given as values
// rather than read from a file, as the REST API's connectors are. The
// rules are those a file's entries follow, from one implementation: the
// loader reports the same problems at their file:line:column.
type Problem struct {
	// Key names the setting as a pipeline file writes it: name, topic,
	// topics, topics_regex, group, errors.tolerance,
	// errors.deadletter.topic, or config.<setting>.
	Key     string
	Message string
	Hint    string // may be empty
}

func (p Problem) String() string {
	if p.Hint == "" {
		return p.Key + ": " + p.Message
	}
	return p.Key + ": " + p.Message + "; " + p.Hint
}

// Keys of Problem.
const (
	KeyName        = "name"
	KeyTopic       = "topic"
	KeyTopics      = "topics"
	KeyTopicsRegex = "topics_regex"
	KeyGroup       = "group"
	KeyTolerance   = "errors.tolerance"
	KeyDeadLetter  = "errors.deadletter.topic"
)

const nameHint = "use letters, digits, '.', '_' and '-', at most 249 characters"

// checkName checks a pipeline, source or sink name.
func checkName(key, what, v string) *Problem {
	if !validName(v) {
		return &Problem{Key: key, Message: fmt.Sprintf("invalid %s %q", what, v), Hint: nameHint}
	}
	return nil
}

// ReservedGroupPrefix starts the consumer groups the worker uses itself
// (the kafka backend's source leases, _tributary-source.PIPELINE.NAME): a
// sink may not read in one.
const ReservedGroupPrefix = "_tributary"

// checkGroup checks a sink's consumer group, written or its name.
func checkGroup(g string) *Problem {
	switch {
	case strings.TrimSpace(g) != g:
		return &Problem{Key: KeyGroup, Message: fmt.Sprintf("consumer group %q has surrounding spaces", g)}
	case strings.HasPrefix(g, ReservedGroupPrefix):
		return &Problem{Key: KeyGroup, Message: fmt.Sprintf("consumer group %q is reserved", g),
			Hint: "groups starting with " + ReservedGroupPrefix + " are the worker's own: choose another group (group:)"}
	}
	return nil
}

// checkTopicName checks a topic name as Kafka does.
func checkTopicName(key, v string) *Problem {
	if !validName(v) || v == "." || v == ".." {
		hint := nameHint
		if isTemplate(v) {
			hint = "templates such as {table} are only allowed in a source's topic"
		}
		return &Problem{Key: key, Message: fmt.Sprintf("invalid topic name %q", v), Hint: hint}
	}
	return nil
}

// topicPlaceholders are the placeholders of a source's topic template that
// each connector replaces (connectors/postgres and connectors/mysql, whose
// topic parameter is the template).
var topicPlaceholders = map[string][]string{
	"postgres": {"{prefix}", "{schema}", "{table}"},
	"mysql":    {"{prefix}", "{database}", "{table}"},
}

// anyPlaceholders are those of a source whose placeholders are not known
// here (a plugin's, which fills in its own template): any of the CDC
// sources'.
var anyPlaceholders = []string{"{prefix}", "{schema}", "{database}", "{table}"}

// placeholdersOf returns the placeholders the connector replaces in a
// source's topic template.
func placeholdersOf(connector string) []string {
	if p, ok := topicPlaceholders[connector]; ok {
		return p
	}
	return anyPlaceholders
}

// checkSourceTopic checks a source's topic, which may be a template: each
// {…} must be a placeholder the connector replaces, and the name with the
// placeholders replaced must be a valid topic name (the connector leaves
// anything else as it is, and the topic would be refused at run time). It
// returns the problem and the byte offset in v it is at, -1 for the topic
// as a whole.
func checkSourceTopic(key, connector, v string) (*Problem, int) {
	if !isTemplate(v) && !strings.Contains(v, "}") {
		return checkTopicName(key, v), -1
	}
	placeholders := placeholdersOf(connector)
	valid := "the " + connector + " connector replaces " + strings.Join(placeholders, ", ")
	if _, known := topicPlaceholders[connector]; !known {
		valid = "a source's topic template may hold " + strings.Join(placeholders, ", ")
	}
	var named strings.Builder // v with each placeholder replaced by a word
	for i := 0; i < len(v); {
		switch v[i] {
		case '{':
			end := strings.IndexAny(v[i+1:], "{}")
			if end < 0 || v[i+1+end] == '{' {
				return &Problem{Key: key, Message: fmt.Sprintf("topic template %q has a %q without its %q", v, "{", "}"),
					Hint: valid + ", each written whole"}, i
			}
			ph := v[i : i+1+end+1]
			if !slices.Contains(placeholders, ph) {
				hint := valid
				if s := suggest(ph, placeholders); s != "" {
					hint = fmt.Sprintf("did you mean %s? %s", s, valid)
				}
				return &Problem{Key: key, Message: fmt.Sprintf("unknown placeholder %s in topic template %q", ph, v), Hint: hint}, i
			}
			named.WriteString("x")
			i += len(ph)
		case '}':
			return &Problem{Key: key, Message: fmt.Sprintf("topic template %q has a %q without its %q", v, "}", "{"), Hint: valid + ", each written whole"}, i
		default:
			named.WriteByte(v[i])
			i++
		}
	}
	if n := named.String(); !validName(n) || n == "." || n == ".." {
		off := strings.IndexFunc(v, func(c rune) bool { return !validName(string(c)) && c != '{' && c != '}' })
		return &Problem{Key: key, Message: fmt.Sprintf("invalid topic name %q: with its placeholders replaced it is not a valid topic name", v),
			Hint: "around the placeholders, use letters, digits, '.', '_' and '-' (at most 249 characters in all)"}, off
	}
	return nil, -1
}

// checkTopicsChoice checks that a sink names its topics one way.
func checkTopicsChoice(hasTopics, hasRegex bool) *Problem {
	switch {
	case hasTopics && hasRegex:
		return &Problem{Key: KeyTopicsRegex, Message: "topics and topics_regex exclude each other", Hint: "keep one of them"}
	case !hasTopics && !hasRegex:
		return &Problem{Key: KeyTopics, Message: `missing required key "topics" (or "topics_regex") in a sink`, Hint: "e.g. topics: [web.tracking]"}
	}
	return nil
}

// checkTopicsRegex checks a sink's topics regex.
func checkTopicsRegex(v string) *Problem {
	if v == "" {
		return &Problem{Key: KeyTopicsRegex, Message: "topics_regex must not be empty"}
	}
	if _, err := regexp.Compile(v); err != nil {
		return &Problem{Key: KeyTopicsRegex, Message: fmt.Sprintf("invalid regular expression: %v", err), Hint: "Go regular expression syntax (RE2)"}
	}
	return nil
}

// checkDeadLetterTolerance checks that a sink with a dead-letter topic
// tolerates errors: without tolerance all, nothing is dead-lettered.
func checkDeadLetterTolerance(tolerance Tolerance) *Problem {
	if tolerance != ToleranceAll {
		return &Problem{Key: KeyDeadLetter, Message: "a dead-letter topic is only used with tolerance: all", Hint: "set tolerance: all, or remove deadletter"}
	}
	return nil
}

// checkDeadLetterTopic checks a sink's dead-letter topic: never a topic
// the sink lists, where it would read its own failures. A topics regex
// that matches it is no problem: the engine leaves the sink's dead-letter
// topic out of what its regex selects.
func checkDeadLetterTopic(topic string, reads []string, sink string) *Problem {
	if p := checkTopicName(KeyDeadLetter, topic); p != nil {
		return p
	}
	if slices.Contains(reads, topic) {
		return &Problem{Key: KeyDeadLetter, Message: fmt.Sprintf("dead-letter topic %q is also a topic the sink reads", topic), Hint: "use a topic of its own, e.g. dlq." + sink}
	}
	return nil
}

// CheckSource checks a source by the rules of a file's sources: a valid
// name, and a topic (or topic template) to write to.
func CheckSource(s Source) []Problem {
	var out []Problem
	add := func(p *Problem) {
		if p != nil {
			out = append(out, *p)
		}
	}
	add(checkName(KeyName, "source name", s.Name))
	if s.Topic == "" {
		add(&Problem{Key: KeyTopic, Message: "a source needs the topic its records go to", Hint: "e.g. topic: web.tracking, or a template such as cdc.{schema}.{table}"})
	} else {
		p, _ := checkSourceTopic(KeyTopic, s.Connector, s.Topic)
		add(p)
	}
	return out
}

// CheckSink checks a sink by the rules of a file's sinks: a valid name,
// exactly one of topics and topics_regex, valid topic names each listed
// once, a regex that compiles, a valid consumer group, and a dead-letter
// topic only with tolerance all and not among the topics it reads.
func CheckSink(s Sink) []Problem {
	var out []Problem
	add := func(p *Problem) {
		if p != nil {
			out = append(out, *p)
		}
	}
	add(checkName(KeyName, "sink name", s.Name))
	add(checkTopicsChoice(len(s.Topics) > 0, s.TopicsRegex != ""))
	seen := make(map[string]bool)
	for _, t := range s.Topics {
		if p := checkTopicName(KeyTopics, t); p != nil {
			add(p)
			continue
		}
		if seen[t] {
			add(&Problem{Key: KeyTopics, Message: fmt.Sprintf("topic %q is listed twice", t)})
		}
		seen[t] = true
	}
	if s.TopicsRegex != "" {
		add(checkTopicsRegex(s.TopicsRegex))
	}
	if g := cmp.Or(s.Group, s.Name); g != "" { // the group defaults to the name
		add(checkGroup(g))
	}
	if !slices.Contains(tolerances, string(s.Errors.Tolerance)) && s.Errors.Tolerance != "" {
		add(&Problem{Key: KeyTolerance, Message: fmt.Sprintf("unknown error tolerance %q", s.Errors.Tolerance), Hint: choicesHint(string(s.Errors.Tolerance), "tolerances", tolerances)})
	}
	if dl := s.Errors.DeadLetter.Topic; dl != "" {
		add(checkDeadLetterTolerance(s.Errors.Tolerance))
		add(checkDeadLetterTopic(dl, s.Topics, s.Name))
	}
	return out
}

// Claim is something a connector holds that no other connector of the
// worker may hold too: a sink's consumer group (two sinks committing to
// one group's offsets skip each other's records), or the value of an
// Exclusive parameter of its connector (the file a sink appends to).
type Claim struct {
	Key   string // the Problem key: group, or config.<setting>
	Value string // compared as it is
	Owner string // the source or sink that holds it
	what  string // how a message names it
}

// SinkClaims returns what a sink holds alone; spec is its connector's
// (nil: only the group).
func SinkClaims(s Sink, spec *connect.Spec) []Claim {
	group := s.Group
	if group == "" {
		group = s.Name
	}
	out := []Claim{{Key: KeyGroup, Value: group, Owner: s.Name, what: "consumer group"}}
	return append(out, exclusiveClaims(s.Name, s.Connector, s.Config, spec)...)
}

// SourceClaims returns what a source holds alone; spec is its connector's.
func SourceClaims(s Source, spec *connect.Spec) []Claim {
	return exclusiveClaims(s.Name, s.Connector, s.Config, spec)
}

func exclusiveClaims(owner, connector string, cfg map[string]string, spec *connect.Spec) []Claim {
	if spec == nil {
		return nil
	}
	var out []Claim
	for _, p := range spec.Params {
		v := connect.ExclusiveValue(cfg[p.Name])
		if !p.Exclusive || v == "" {
			continue
		}
		out = append(out, Claim{Key: "config." + p.Name, Value: connector + "\x00" + p.Name + "\x00" + v, Owner: owner,
			what: fmt.Sprintf("%s %s %q", connector, p.Name, v)})
	}
	return out
}

// CheckClaims reports each claim of mine that one of held holds too.
func CheckClaims(mine, held []Claim) []Problem {
	var out []Problem
	for _, c := range mine {
		for _, h := range held {
			if h.Key == c.Key && h.Value == c.Value && h.Owner != c.Owner {
				out = append(out, claimProblem(c, h.Owner))
				break
			}
		}
	}
	return out
}

func claimProblem(c Claim, holder string) Problem {
	if c.Key == KeyGroup {
		return Problem{Key: c.Key, Message: fmt.Sprintf("consumer group %q is already used by sink %s", c.Value, holder), Hint: "each sink needs a consumer group of its own; set group:"}
	}
	return Problem{Key: c.Key, Message: fmt.Sprintf("%s is already used by %s", c.what, holder), Hint: "one connector of a worker holds it alone: give each its own"}
}
