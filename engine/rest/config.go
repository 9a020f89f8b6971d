package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/pipelines"
)

// The worker's own keys of a Kafka Connect style flat config; every other
// key is the connector's.
const (
	keyClass          = "connector.class"
	keyName           = "name"
	keyTasksMax       = "tasks.max"
	keyTopic          = "topic"
	keyTopics         = "topics"
	keyTopicsRegex    = "topics.regex"
	keyGroup          = "group"
	keyTransforms     = "transforms"
	keyTolerance      = "errors.tolerance"
	keyRetries        = "errors.retries"
	keyRetryDelayInit = "errors.retry.delay.initial.ms"
	keyRetryDelayMax  = "errors.retry.delay.max.ms"
	keyRetryTimeout   = "errors.retry.timeout"
	keyDeadLetter     = "errors.deadletterqueue.topic.name"
	keyLogEnable      = "errors.log.enable"
	keyLogMessages    = "errors.log.include.messages"
	keyDLQHeaders     = "errors.deadletterqueue.context.headers.enable"
	keyDLQReplication = "errors.deadletterqueue.topic.replication.factor"
	// keyLinger is the one producer override that means something here:
	// a source's linger (engine.ConnectorSpec.Linger). Every other
	// producer.override.* key is the connector's, so an unknown one.
	keyLinger = "producer.override.linger.ms"
)

// Groups of the validate endpoint's definitions, as Kafka Connect names
// them; a connector's own parameters are in a group named after it.
const (
	groupCommon     = "Common"
	groupTransforms = "Transforms"
	groupErrors     = "Error Handling"
)

// Defaults of the error settings over REST, where the engine applies them.
const (
	defaultRetryDelayInit = 100 * time.Millisecond
	defaultRetryDelayMax  = 10 * time.Second
)

// commonKey is one of the worker's keys, as the validate endpoint defines
// it.
type commonKey struct {
	name, group, typ, def, doc string
	kind                       connect.Kind // "": sources and sinks
	required                   bool
	enum                       []string
}

// commonKeys are the worker's keys in the order validate lists them:
// Kafka Connect's common, transform and error-handling configs, as far as
// they mean something here.
var commonKeys = []commonKey{
	{name: keyName, group: groupCommon, typ: "STRING", required: true, doc: "Globally unique name of this connector."},
	{name: keyClass, group: groupCommon, typ: "STRING", required: true, doc: "The connector's name, e.g. file, postgres, iceberg (GET /connector-plugins lists them)."},
	{name: keyTasksMax, group: groupCommon, typ: "INT", def: "1", doc: "Only 1: a worker runs one task per connector."},
	{name: keyTopic, group: groupCommon, typ: "STRING", kind: connect.KindSource, doc: "The topic the source's records go to; may be a template such as cdc.{schema}.{table}."},
	{name: keyTopics, group: groupCommon, typ: "LIST", kind: connect.KindSink, doc: "The topics the sink reads; this or topics.regex is required."},
	{name: keyTopicsRegex, group: groupCommon, typ: "STRING", kind: connect.KindSink, doc: "A regular expression the names of the topics the sink reads match as a whole; this or topics is required."},
	{name: keyGroup, group: groupCommon, typ: "STRING", kind: connect.KindSink, doc: "The sink's consumer group; default its name."},
	{name: keyLinger, group: groupCommon, typ: "LONG", def: "0", kind: connect.KindSource, doc: "The source's linger in ms: records read while the previous append is not yet durable wait for it, up to this long, and are appended together (fewer appends and log fsyncs, more latency); 0 appends each read at once."},
	{name: "key.converter", group: groupCommon, typ: "CLASS", doc: "Accepted and ignored: Tributary has no converters (records are bytes)."},
	{name: "value.converter", group: groupCommon, typ: "CLASS", doc: "Accepted and ignored: Tributary has no converters (records are bytes)."},
	{name: "header.converter", group: groupCommon, typ: "CLASS", doc: "Accepted and ignored: Tributary has no converters (records are bytes)."},
	{name: keyTransforms, group: groupTransforms, typ: "LIST", doc: "Aliases of the transforms to apply, in order; transforms.<alias>.type names each one's type."},
	{name: keyTolerance, group: groupErrors, typ: "STRING", def: "none", enum: tolerances, doc: "none: a record that cannot be delivered fails the task; all: it is skipped, or sent to the dead-letter topic."},
	{name: keyRetries, group: groupErrors, typ: "INT", def: "0", doc: "Retries of a failed write before errors.tolerance applies; -1 retries without limit."},
	{name: keyRetryTimeout, group: groupErrors, typ: "LONG", def: "0", doc: "Kafka Connect's retry budget in ms (-1 without limit): taken as the errors.retries whose backoff waits fit in it."},
	{name: keyRetryDelayInit, group: groupErrors, typ: "LONG", def: "100", doc: "The first wait between retries, in ms; each next one doubles."},
	{name: keyRetryDelayMax, group: groupErrors, typ: "LONG", def: "10000", doc: "The longest wait between retries, in ms."},
	{name: keyLogEnable, group: groupErrors, typ: "BOOLEAN", def: "false", doc: "Accepted and ignored: the worker logs retried writes and skipped records whatever it says."},
	{name: keyLogMessages, group: groupErrors, typ: "BOOLEAN", def: "false", doc: "Accepted and ignored: Tributary has no setting to log record contents: the worker's log names a failed record by topic, partition and offset."},
	{name: keyDeadLetter, group: groupErrors, typ: "STRING", kind: connect.KindSink, doc: "The dead-letter topic, with errors.tolerance=all."},
	{name: keyDLQReplication, group: groupErrors, typ: "SHORT", def: "3", kind: connect.KindSink, doc: "Accepted and ignored: Tributary sets no replication factor of its own for the dead-letter topic."},
	{name: keyDLQHeaders, group: groupErrors, typ: "BOOLEAN", def: "false", kind: connect.KindSink, doc: "Dead-letter records always carry the __connect.errors.* headers; false is accepted with a warning."},
}

// commonKeysOf returns the names of the worker's keys of a kind of
// connector, sorted.
func commonKeysOf(kind connect.Kind) []string {
	var out []string
	for _, k := range commonKeys {
		if k.kind == "" || k.kind == kind {
			out = append(out, k.name)
		}
	}
	out = append(out, keyTransforms+".*")
	slices.Sort(out)
	return out
}

// tolerances are the valid errors.tolerance values, as the pipeline loader
// accepts them.
var tolerances = []string{"none", "all"}

// converterKey reports whether a key configures a Kafka Connect converter
// (key.converter, value.converter.schemas.enable, header.converter, ...).
// Tributary has no converters: records are bytes, and the CDC sources'
// "schemas" setting decides whether change events embed their schema.
func converterKey(k string) bool {
	for _, p := range []string{"key.converter", "value.converter", "header.converter"} {
		if k == p || strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

// problem is one thing wrong with one key of a flat config.
type problem struct {
	key string
	msg string
	// named: msg names the key itself, as Kafka Connect's "Invalid value
	// … for configuration …" does.
	named bool
}

// line is the problem as a line of Kafka Connect's message.
func (p problem) line() string {
	if p.named || p.key == "" {
		return p.msg
	}
	return p.key + ": " + p.msg
}

// invalidConfig is a flat config with problems: a bad request, whose
// message is Kafka Connect's (configMessage).
type invalidConfig struct{ problems []problem }

func (e *invalidConfig) Error() string {
	lines := make([]string, len(e.problems))
	for i, p := range e.problems {
		lines[i] = p.line()
	}
	return configMessage(lines)
}

// Is makes an invalidConfig an ErrBadRequest.
func (e *invalidConfig) Is(target error) bool { return target == engine.ErrBadRequest }

// configMessage is Kafka Connect's message for an invalid connector
// config, one line per problem; clients match its last line.
func configMessage(lines []string) string {
	return fmt.Sprintf("Connector configuration is invalid and contains the following %d error(s):\n%s\n"+
		"You can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`",
		len(lines), strings.Join(lines, "\n"))
}

// specFromConfig turns a Kafka Connect style flat config into a spec (see
// readConfig); a config with problems is an *invalidConfig, whose message
// lists them all.
func (s *Server) specFromConfig(name string, cfg map[string]string) (engine.ConnectorSpec, error) {
	if name == "" {
		return engine.ConnectorSpec{}, fmt.Errorf("%w: connector name is required", engine.ErrBadRequest)
	}
	spec, _, problems, err := s.readConfig(name, cfg, true)
	if err != nil {
		return spec, err
	}
	if len(problems) > 0 {
		return spec, &invalidConfig{problems: problems}
	}
	return spec, nil
}

// readConfig reads a Kafka Connect style flat config: connector.class
// names the connector; topic (sources) or topics / topics.regex (sinks),
// group, tasks.max, errors.*, transforms.* and a source's
// producer.override.linger.ms are the worker's keys;
// converter keys and the error settings that mean nothing here are
// accepted and ignored, with a warning when warn is set; the rest is the
// connector's config. It returns every problem the pipeline loader would
// find, each at its key; err is for a config that names no known
// connector.
func (s *Server) readConfig(name string, cfg map[string]string, warn bool) (engine.ConnectorSpec, connect.Connector, []problem, error) {
	class := cfg[keyClass]
	if class == "" {
		return engine.ConnectorSpec{}, connect.Connector{}, nil, fmt.Errorf("%w: Connector config %v contains no connector type", engine.ErrBadRequest, keys(cfg))
	}
	spec := engine.ConnectorSpec{Pipeline: engine.RESTPipeline, Name: name, Connector: class, Config: map[string]string{}}
	conn, err := s.worker.Registry().Lookup(connect.KindSource, class)
	if err == nil {
		spec.Kind = connect.KindSource
	} else if conn, err = s.worker.Registry().Lookup(connect.KindSink, class); err == nil {
		spec.Kind = connect.KindSink
	} else {
		return spec, conn, nil, fmt.Errorf("%w: Failed to find any class that implements Connector and which name matches %s", engine.ErrBadRequest, class)
	}
	var problems []problem
	bad := func(k, msg string) { problems = append(problems, problem{key: k, msg: msg}) }
	invalid := func(k, v, why string) {
		problems = append(problems, problem{key: k, msg: fmt.Sprintf("Invalid value %s for configuration %s: %s", v, k, why), named: true})
	}
	var ignored []string
	// Warnings are logged once the config is known to be valid.
	var warnings []func()
	ignore := func(k, why string) {
		warnings = append(warnings, func() {
			s.logger.Warn("ignoring a Kafka Connect setting: "+why, "connector", name, "key", k, "value", cfg[k])
		})
	}
	retriesSet := false
	for _, k := range keys(cfg) {
		v := cfg[k]
		switch k {
		case keyClass, keyName, keyTransforms:
		case keyTasksMax:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			switch {
			case err != nil || n < 1:
				invalid(k, v, "must be a positive integer")
			case n > 1:
				who := "the connector"
				if name != "" {
					who = "connector " + name
				}
				bad(k, fmt.Sprintf("%s asks for %d tasks (%s=%s); this worker runs one task per connector (set %s=1, or run several workers on the kafka backend)",
					who, n, keyTasksMax, v, keyTasksMax))
			}
		case keyTopic:
			spec.Topic = v
		case keyTopics:
			spec.Topics = connect.SplitList(v)
		case keyTopicsRegex:
			spec.TopicsRegex = v
		case keyGroup:
			spec.Group = v
		case keyLinger:
			if spec.Kind != connect.KindSource {
				spec.Config[k] = v // a sink has no producer: the connector's, so unknown
				break
			}
			if d, ok := lingerMs(v); ok {
				spec.Linger = d
			} else {
				invalid(k, v, "must be a number of milliseconds of at least 0")
			}
		case keyTolerance:
			if slices.Contains(tolerances, v) {
				spec.Errors.Tolerance = v
			} else {
				invalid(k, v, "String must be one of: "+strings.Join(tolerances, ", "))
			}
		case keyRetries:
			if n, ok := intAtLeast(v, -1); ok {
				spec.Errors.Retries, retriesSet = n, true
			} else {
				invalid(k, v, "must be an integer of at least -1")
			}
		case keyRetryDelayInit, keyRetryDelayMax:
			n, ok := intAtLeast(v, 0)
			if !ok {
				invalid(k, v, "must be an integer of at least 0")
				break
			}
			if k == keyRetryDelayInit {
				spec.Errors.BackoffInitial = time.Duration(n) * time.Millisecond
			} else {
				spec.Errors.BackoffMax = time.Duration(n) * time.Millisecond
			}
		case keyRetryTimeout:
			if _, ok := intAtLeast(v, -1); !ok {
				invalid(k, v, "must be an integer of at least -1 (ms; -1 retries without limit)")
			}
		case keyDeadLetter:
			spec.Errors.DeadLetterTopic = v
		case keyLogEnable, keyLogMessages, keyDLQHeaders:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				invalid(k, v, "Expected value to be either true or false")
				break
			}
			switch {
			case k == keyLogEnable:
				ignore(k, "the worker logs each retried write and each record it skips (without a dead-letter topic) at warn level, whatever errors.log.enable says")
			case k == keyLogMessages:
				ignore(k, "Tributary has no setting to log record contents: the worker's log names a failed record by topic, partition and offset")
			case !b:
				ignore(k, "dead-letter records always carry the __connect.errors.* headers (topic, partition, offset, exception, ...)")
			}
		case keyDLQReplication:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n == 0 || n < -1 {
				invalid(k, v, "must be -1 or a positive integer")
				break
			}
			ignore(k, "Tributary sets no replication factor of its own for the dead-letter topic (the embedded log keeps one copy; on the kafka backend create the topic with the replication you want)")
		default:
			switch {
			case strings.HasPrefix(k, keyTransforms+"."):
			case converterKey(k):
				ignored = append(ignored, k)
			default:
				spec.Config[k] = v
			}
		}
	}
	if v, ok := cfg[keyRetryTimeout]; ok {
		if n, valid := intAtLeast(v, -1); valid {
			if w := s.retryTimeout(&spec, n, retriesSet); w != nil {
				warnings = append(warnings, w)
			}
		}
	}
	if len(ignored) > 0 {
		warnings = append(warnings, func() {
			s.logger.Warn("ignoring Kafka Connect converter settings: Tributary does not use converters (records are bytes; the CDC sources' schemas setting controls embedded schemas)",
				"connector", name, "keys", ignored)
		})
	}
	problems = append(problems, s.connectorProblems(spec, conn)...)
	problems = append(problems, s.checkRules(spec)...)
	if e := spec.Errors; e.BackoffMax > 0 && e.BackoffMax < e.BackoffInitial {
		bad(keyRetryDelayMax, fmt.Sprintf("%s %s is less than %s %s", keyRetryDelayMax, e.BackoffMax, keyRetryDelayInit, e.BackoffInitial))
	}
	ts, err := s.transformsFromConfig(cfg)
	if err != nil {
		bad(keyTransforms, strings.TrimPrefix(err.Error(), engine.ErrBadRequest.Error()+": "))
	}
	spec.Transforms = ts
	for i := range problems {
		problems[i].msg = s.maskProblem(conn, cfg, problems[i].msg)
	}
	if warn && len(problems) == 0 {
		for _, w := range warnings {
			w()
		}
	}
	return spec, conn, problems, nil
}

// maskProblem hides in msg, a problem of the flat config cfg of conn,
// what GET …/config masks (pipelines.MaskMessage): the values of secret
// parameters of the connector and of its transforms, and the parts of
// others the connector's Redact masks. A check may quote any value, so
// the validate endpoint's errors and a 400's message would otherwise show
// what its values hide.
func (s *Server) maskProblem(conn connect.Connector, cfg map[string]string, msg string) string {
	msg = pipelines.MaskMessage(conn.Spec, cfg, msg)
	for _, a := range connect.SplitList(cfg[keyTransforms]) {
		prefix := keyTransforms + "." + a + "."
		ts, ok := s.transforms.Spec(cfg[prefix+"type"])
		if !ok {
			continue
		}
		tcfg := map[string]string{}
		for k, v := range cfg {
			if key, ok := strings.CutPrefix(k, prefix); ok {
				tcfg[key] = v
			}
		}
		msg = pipelines.MaskMessage(ts, tcfg, msg)
	}
	return msg
}

// retryTimeout applies Kafka Connect's errors.retry.timeout (ms; -1
// without limit, 0 no retries) to a spec: Tributary retries a failed write
// a number of times, so the timeout becomes the count of retries whose
// longest backoff waits fit in it (at least one for a positive timeout).
// An errors.retries given as well wins. It returns the warning to log, if
// any.
func (s *Server) retryTimeout(spec *engine.ConnectorSpec, ms int, retriesSet bool) func() {
	if retriesSet {
		return func() {
			s.logger.Warn("ignoring errors.retry.timeout: errors.retries is set, and Tributary retries by count", "connector", spec.Name, "errors.retries", spec.Errors.Retries)
		}
	}
	if ms <= 0 {
		spec.Errors.Retries = ms // -1 without limit, 0 none: the same meaning
		return nil
	}
	initial, longest := spec.Errors.BackoffInitial, spec.Errors.BackoffMax
	if initial <= 0 {
		initial = defaultRetryDelayInit
	}
	if longest <= 0 {
		longest = defaultRetryDelayMax
	}
	n := retriesWithin(time.Duration(ms)*time.Millisecond, initial, longest)
	spec.Errors.Retries = n
	return func() {
		s.logger.Warn("errors.retry.timeout: Tributary retries a failed write a number of times, not for a time; taken as errors.retries, the retries whose backoff waits fit in the timeout",
			"connector", spec.Name, "errors.retry.timeout", ms, "errors.retries", n)
	}
}

// retriesWithin returns how many retries fit in budget when the waits
// before them double from initial up to max (the engine's backoff, at its
// longest): at least one.
func retriesWithin(budget, initial, longest time.Duration) int {
	n, total, d := 0, time.Duration(0), initial
	for {
		w := min(d, longest)
		if total+w > budget {
			return max(n, 1)
		}
		total += w
		n++
		if d < longest {
			d *= 2
		}
	}
}

// lingerMs reads producer.override.linger.ms: milliseconds, at least 0; a
// fraction is accepted, so that a pipeline file's sub-millisecond linger
// survives a PUT of the config GET shows (formatLingerMs).
func lingerMs(v string) (time.Duration, bool) {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(ms >= 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// formatLingerMs is a linger as producer.override.linger.ms shows it.
func formatLingerMs(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}

func intAtLeast(v string, least int) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n >= least
}

// connectorProblems checks the connector's own config against its spec,
// as the worker will: an unknown key is named with the worker's keys too,
// since it may be a misspelt one of those.
func (s *Server) connectorProblems(spec engine.ConnectorSpec, conn connect.Connector) []problem {
	cfg := spec.Config
	if _, has := conn.Spec.Param(keyTopic); has && spec.Kind == connect.KindSource && spec.Topic != "" && cfg[keyTopic] == "" {
		// The worker hands the source's topic to a connector that has a
		// topic parameter (engine.topicToConfig).
		cfg = maps.Clone(cfg)
		cfg[keyTopic] = spec.Topic
	}
	var out []problem
	for _, e := range conn.Spec.Validate(cfg) {
		msg := e.Message
		if _, known := conn.Spec.Param(e.Param); !known && e.Param != "" {
			own := fmt.Sprintf("the %s connector's are: %s", conn.Name, strings.Join(conn.Spec.Names(), ", "))
			if len(conn.Spec.Params) == 0 {
				own = fmt.Sprintf("the %s connector has none of its own", conn.Name)
			}
			msg = fmt.Sprintf("unknown parameter; %s; the worker's: %s", own, strings.Join(commonKeysOf(spec.Kind), ", "))
		}
		out = append(out, problem{key: e.Param, msg: msg})
	}
	return out
}

// checkRules checks a spec by the rules of a pipeline file's sources and
// sinks (pipelines.CheckSource, pipelines.CheckSink): the one
// implementation of them. What relates it to the other connectors (a
// consumer group or a file another one holds) the worker checks.
func (s *Server) checkRules(spec engine.ConnectorSpec) []problem {
	var problems []pipelines.Problem
	switch spec.Kind {
	case connect.KindSource:
		src := pipelines.Source{Name: spec.Name, Connector: spec.Connector, Topic: spec.Topic, Config: spec.Config}
		if src.Topic == "" {
			// A connector that names its records' topics itself (the CDC
			// sources' "topic" template) has a default.
			if c, err := s.worker.Registry().Lookup(spec.Kind, spec.Connector); err == nil {
				if p, ok := c.Spec.Param(keyTopic); ok {
					src.Topic = p.Default
				}
			}
		}
		problems = pipelines.CheckSource(src)
	case connect.KindSink:
		problems = pipelines.CheckSink(pipelines.Sink{Name: spec.Name, Connector: spec.Connector, Topics: spec.Topics, TopicsRegex: spec.TopicsRegex,
			Group: spec.Group, Config: spec.Config, Errors: pipelines.ErrorPolicy{Tolerance: pipelines.Tolerance(spec.Errors.Tolerance),
				DeadLetter: pipelines.DeadLetter{Topic: spec.Errors.DeadLetterTopic}}})
	}
	out := make([]problem, len(problems))
	for i, p := range problems {
		out[i] = flatProblem(p)
	}
	return out
}

// flatKeys are the flat config's names of the keys of a pipeline file
// that problems name.
var flatKeys = map[string]string{
	pipelines.KeyName: keyName, pipelines.KeyTopic: keyTopic, pipelines.KeyTopics: keyTopics,
	pipelines.KeyTopicsRegex: keyTopicsRegex, pipelines.KeyGroup: keyGroup,
	pipelines.KeyTolerance: keyTolerance, pipelines.KeyDeadLetter: keyDeadLetter,
}

// flatWords rewrite a pipeline file's key names in messages.
var flatWords = strings.NewReplacer("topics_regex", keyTopicsRegex, "tolerance: all", keyTolerance+"=all",
	"remove deadletter", "remove "+keyDeadLetter, "set group:", "set "+keyGroup, "topics: [web.tracking]", "topics=web.tracking")

// flatProblem is a pipeline file's problem as the flat config names it.
func flatProblem(p pipelines.Problem) problem {
	key, ok := flatKeys[p.Key]
	if !ok {
		key = strings.TrimPrefix(p.Key, "config.")
	}
	msg := flatWords.Replace(p.Message)
	if p.Hint != "" {
		msg += "; " + flatWords.Replace(p.Hint)
	}
	return problem{key: key, msg: msg}
}

// configErrorMessage is Kafka Connect's message for a connector config
// the worker refused (a group or a file another connector holds).
func configErrorMessage(e *engine.ConfigError) string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = flatProblem(p).line()
	}
	return configMessage(lines)
}

// transformsFromConfig reads Kafka Connect's transform keys:
// transforms=a,b names the chain in order, transforms.a.type its type, and
// transforms.a.<key> its settings. Each transform is built once to check
// its type and settings.
func (s *Server) transformsFromConfig(cfg map[string]string) ([]engine.TransformSpec, error) {
	aliases := connect.SplitList(cfg[keyTransforms])
	listed := map[string]bool{}
	var out []engine.TransformSpec
	for _, a := range aliases {
		if listed[a] {
			return nil, fmt.Errorf("%w: %s lists %q twice", engine.ErrBadRequest, keyTransforms, a)
		}
		listed[a] = true
		typ := cfg[keyTransforms+"."+a+".type"]
		if typ == "" {
			return nil, fmt.Errorf("%w: transform %s has no type: set %s.%s.type", engine.ErrBadRequest, a, keyTransforms, a)
		}
		out = append(out, engine.TransformSpec{Name: a, Type: typ, Config: map[string]string{}})
	}
	for k, v := range cfg {
		rest, ok := strings.CutPrefix(k, keyTransforms+".")
		if !ok {
			continue
		}
		alias, key, ok := strings.Cut(rest, ".")
		if !ok || key == "" {
			return nil, fmt.Errorf("%w: %s: write %s.<alias>.<setting>", engine.ErrBadRequest, k, keyTransforms)
		}
		i := slices.Index(aliases, alias)
		if i < 0 {
			return nil, fmt.Errorf("%w: %s: transform %s is not listed in %s=%s", engine.ErrBadRequest, k, alias, keyTransforms, cfg[keyTransforms])
		}
		if key != "type" {
			out[i].Config[key] = v
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	factory := s.worker.TransformFactory()
	if factory == nil {
		return nil, fmt.Errorf("%w: transforms are not available in this worker", engine.ErrBadRequest)
	}
	for i, t := range out {
		if _, err := factory(t.Type, t.Config); err != nil {
			return nil, fmt.Errorf("%w: transform %s: %v", engine.ErrBadRequest, aliases[i], err)
		}
	}
	return out, nil
}

// transformAliases names a chain's transforms for the flat config: each by
// the alias the user gave it (TransformSpec.Name), else by its type, the
// second of a type <type>_2, and so on, avoiding the given aliases. The
// names depend only on the chain, so a config read back and written again
// is the same chain.
func transformAliases(ts []engine.TransformSpec) []string {
	used := map[string]bool{}
	out := make([]string, len(ts))
	for i, t := range ts {
		if t.Name != "" && !used[t.Name] {
			used[t.Name] = true
			out[i] = t.Name
		}
	}
	for i, t := range ts {
		if out[i] != "" {
			continue
		}
		name := t.Type
		for n := 2; used[name] || name == ""; n++ {
			name = fmt.Sprintf("%s_%d", t.Type, n)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

// keepTransformSecrets carries the secrets of a connector's transforms
// (TransformSpec.Secrets: values from the environment, say) over to the
// chain a PUT or PATCH makes of the flat config, as the connector's own
// Secrets are carried: a transform that keeps its alias and type keeps
// its secret keys, so that they stay masked.
func keepTransformSecrets(old, next []engine.TransformSpec) {
	if len(old) == 0 || len(next) == 0 {
		return
	}
	oldAliases := transformAliases(old)
	nextAliases := transformAliases(next)
	for i := range next {
		j := slices.Index(oldAliases, nextAliases[i])
		if j < 0 || old[j].Type != next[i].Type || len(old[j].Secrets) == 0 {
			continue
		}
		next[i].Secrets = slices.Clone(old[j].Secrets)
	}
}

// maskTransformConfig returns a transform's config with the values of its
// secret parameters and of its Secrets masked.
func (s *Server) maskTransformConfig(t engine.TransformSpec) map[string]string {
	ts, _ := s.transforms.Spec(t.Type)
	out := ts.Mask(t.Config)
	for _, k := range t.Secrets {
		if v, ok := out[k]; ok && v != "" {
			out[k] = connect.Masked
		}
	}
	return out
}

// flatConfig is a connector's config as GET …/config shows it: the
// worker's view plus the keys it leaves out (transforms, every errors.*
// setting, topics.regex, a source's linger), so that PUT of the answer
// changes nothing. With
// clear, secrets are in clear (for merging a PATCH; never show it).
func (s *Server) flatConfig(info engine.ConnectorInfo, spec engine.ConnectorSpec, clear bool) map[string]string {
	out := maps.Clone(info.Config)
	if out == nil {
		out = map[string]string{}
	}
	if clear {
		maps.Copy(out, spec.Config)
	}
	if spec.TopicsRegex != "" {
		out[keyTopicsRegex] = spec.TopicsRegex
		if len(spec.Topics) == 0 {
			delete(out, keyTopics)
		}
	}
	e := spec.Errors
	setIf := func(k, v string, set bool) {
		if set {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	setIf(keyTolerance, e.Tolerance, e.Tolerance != "")
	setIf(keyRetries, strconv.Itoa(e.Retries), e.Retries != 0)
	setIf(keyRetryDelayInit, strconv.FormatInt(e.BackoffInitial.Milliseconds(), 10), e.BackoffInitial > 0)
	setIf(keyRetryDelayMax, strconv.FormatInt(e.BackoffMax.Milliseconds(), 10), e.BackoffMax > 0)
	setIf(keyDeadLetter, e.DeadLetterTopic, e.DeadLetterTopic != "")
	if spec.Kind == connect.KindSource {
		setIf(keyLinger, formatLingerMs(spec.Linger), spec.Linger > 0)
	}
	if len(spec.Transforms) > 0 {
		aliases := transformAliases(spec.Transforms)
		out[keyTransforms] = strings.Join(aliases, ",")
		for i, t := range spec.Transforms {
			p := keyTransforms + "." + aliases[i] + "."
			out[p+"type"] = t.Type
			cfg := t.Config
			if !clear {
				cfg = s.maskTransformConfig(t)
			}
			for k, v := range cfg {
				out[p+k] = v
			}
		}
	}
	return out
}

// connectorConfig returns a connector's flat config, secrets masked.
func (s *Server) connectorConfig(name string) (engine.ConnectorInfo, error) {
	return s.connectorConfigClear(name, false)
}

func (s *Server) connectorConfigClear(name string, clear bool) (engine.ConnectorInfo, error) {
	info, err := s.worker.Info(name)
	if err != nil {
		return info, err
	}
	spec, err := s.worker.Spec(name)
	if err != nil {
		return info, err
	}
	info.Config = s.flatConfig(info, spec, clear)
	return info, nil
}

// keepMasked replaces the masked values of a config sent back with the
// connector's current values: a value as GET shows it masked (wholly, or
// in part, as a header's credential or a URL's key) means "keep the
// secret", so that PUT of GET's answer never stores a mask.
func (s *Server) keepMasked(name string, cfg map[string]string) {
	clear, err := s.connectorConfigClear(name, true)
	if err != nil {
		return
	}
	shown, err := s.connectorConfig(name)
	if err != nil {
		return
	}
	for k, v := range cfg {
		if ov, ok := clear.Config[k]; ok && (v == connect.Masked || v == shown.Config[k]) {
			cfg[k] = ov
		}
	}
}

// configJSON is a connector config in a request body. Kafka Connect reads
// it as a Map<String,String>, whose values Jackson takes from JSON
// strings, numbers and booleans alike ("tasks.max": 1 is common in copied
// examples): so does this, keeping a number as it is written. null reads
// as "", an object or an array is refused (configValueJSON).
type configJSON map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (c *configJSON) UnmarshalJSON(b []byte) error {
	var p configPatchJSON
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p == nil {
		*c = nil
		return nil
	}
	out := make(configJSON, len(p))
	for k, v := range p {
		out[k] = ""
		if v != nil {
			out[k] = *v
		}
	}
	*c = out
	return nil
}

// configPatchJSON is the body of PATCH …/config: configJSON whose null
// values stay nil (they remove the key).
type configPatchJSON map[string]*string

// UnmarshalJSON implements json.Unmarshaler.
func (c *configPatchJSON) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*c = nil
		return nil
	}
	out := make(configPatchJSON, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v, err := configValueJSON(k, raw[k])
		if err != nil {
			return err
		}
		out[k] = v
	}
	*c = out
	return nil
}

// configValueJSON reads one config value: a string, or a number or a
// boolean as its JSON text; nil for null.
func configValueJSON(key string, raw json.RawMessage) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return &v, nil
	case '{':
		return nil, fmt.Errorf("config %q is a JSON object: config values are strings; write it as one (a JSON document as a quoted string)", key)
	case '[':
		return nil, fmt.Errorf("config %q is a JSON array: config values are strings; write a list comma-separated, e.g. %q: %q", key, key, "a,b")
	}
	v := string(raw) // a number or a boolean, as written
	return &v, nil
}

// checkConfigName refuses a config whose "name" differs from the
// connector's name, with Kafka Connect's message; where says where the
// name was given, when not in the URL. A config without a name is fine:
// the connector's applies.
func checkConfigName(name string, cfg map[string]string, where string) error {
	given, ok := cfg[keyName]
	if !ok || given == name {
		return nil
	}
	msg := fmt.Sprintf("Connector name configuration (%s) doesn't match connector name in the URL (%s)", given, name)
	if where != "" {
		msg += " (the connector's name is " + where + ")"
	}
	return fmt.Errorf("%w: %s; set %q to %q in the config, or leave it out", engine.ErrBadRequest, msg, keyName, name)
}
