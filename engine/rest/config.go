package rest

import (
	"fmt"
	"maps"
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
	keyDeadLetter     = "errors.deadletterqueue.topic.name"
)

// tolerances are the valid errors.tolerance values, as the pipeline loader
// accepts them.
var tolerances = []string{"none", "all"}

// workerKey reports whether a key belongs to the worker rather than the
// connector.
func workerKey(k string) bool {
	switch k {
	case keyClass, keyName, keyTasksMax, keyTopic, keyTopics, keyTopicsRegex, keyGroup, keyTransforms,
		keyTolerance, keyRetries, keyRetryDelayInit, keyRetryDelayMax, keyDeadLetter:
		return true
	}
	return strings.HasPrefix(k, keyTransforms+".")
}

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

// specFromConfig turns a Kafka Connect style flat config into a spec:
// connector.class names the connector; topic (sources) or topics /
// topics.regex (sinks), group, tasks.max, errors.* and transforms.* are the
// worker's keys; converter keys are ignored with a warning; the rest is the
// connector's config. It checks what the pipeline loader checks.
func (s *Server) specFromConfig(name string, cfg map[string]string) (engine.ConnectorSpec, error) {
	if name == "" {
		return engine.ConnectorSpec{}, fmt.Errorf("%w: connector name is required", engine.ErrBadRequest)
	}
	class := cfg[keyClass]
	if class == "" {
		return engine.ConnectorSpec{}, fmt.Errorf("%w: Connector config %v contains no connector type", engine.ErrBadRequest, keys(cfg))
	}
	spec := engine.ConnectorSpec{Pipeline: "rest", Name: name, Connector: class, Config: map[string]string{}}
	if _, err := s.worker.Registry().Lookup(connect.KindSource, class); err == nil {
		spec.Kind = connect.KindSource
	} else if _, err := s.worker.Registry().Lookup(connect.KindSink, class); err == nil {
		spec.Kind = connect.KindSink
	} else {
		return spec, fmt.Errorf("%w: Failed to find any class that implements Connector and which name matches %s", engine.ErrBadRequest, class)
	}
	var ignored []string
	for k, v := range cfg {
		var err error
		switch k {
		case keyClass, keyName, keyTransforms:
		case keyTasksMax:
			err = checkTasksMax(name, v)
		case keyTopic:
			spec.Topic = v
		case keyTopics:
			spec.Topics = connect.SplitList(v)
		case keyTopicsRegex:
			spec.TopicsRegex = v
		case keyGroup:
			spec.Group = v
		case keyTolerance:
			if !slices.Contains(tolerances, v) {
				err = fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: %s", engine.ErrBadRequest, v, k, strings.Join(tolerances, ", "))
			}
			spec.Errors.Tolerance = v
		case keyRetries:
			spec.Errors.Retries, err = intValue(k, v, -1)
		case keyRetryDelayInit:
			spec.Errors.BackoffInitial, err = msValue(k, v)
		case keyRetryDelayMax:
			spec.Errors.BackoffMax, err = msValue(k, v)
		case keyDeadLetter:
			spec.Errors.DeadLetterTopic = v
		default:
			switch {
			case strings.HasPrefix(k, keyTransforms+"."):
			case converterKey(k):
				ignored = append(ignored, k)
			default:
				spec.Config[k] = v
			}
		}
		if err != nil {
			return spec, err
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		s.logger.Warn("ignoring Kafka Connect converter settings: Tributary does not use converters (records are bytes; the CDC sources' schemas setting controls embedded schemas)",
			"connector", name, "keys", ignored)
	}
	if err := s.checkRules(spec); err != nil {
		return spec, err
	}
	if e := spec.Errors; e.BackoffMax > 0 && e.BackoffMax < e.BackoffInitial {
		return spec, fmt.Errorf("%w: %s %s is less than %s %s", engine.ErrBadRequest, keyRetryDelayMax, e.BackoffMax, keyRetryDelayInit, e.BackoffInitial)
	}
	ts, err := s.transformsFromConfig(cfg)
	if err != nil {
		return spec, err
	}
	spec.Transforms = ts
	return spec, nil
}

// checkRules checks a spec by the rules of a pipeline file's sources and
// sinks (pipelines.CheckSource, pipelines.CheckSink): the one
// implementation of them. What relates it to the other connectors (a
// consumer group or a file another one holds) the worker checks.
func (s *Server) checkRules(spec engine.ConnectorSpec) error {
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
	if len(problems) > 0 {
		return &engine.ConfigError{Connector: spec.Name, Problems: problems}
	}
	return nil
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

// configErrorMessage is Kafka Connect's message for an invalid connector
// config: one line per problem, naming the key as the flat config does.
func configErrorMessage(e *engine.ConfigError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", len(e.Problems))
	for _, p := range e.Problems {
		key, ok := flatKeys[p.Key]
		if !ok {
			key = strings.TrimPrefix(p.Key, "config.")
		}
		fmt.Fprintf(&b, "\n%s: %s", key, flatWords.Replace(p.Message))
		if p.Hint != "" {
			b.WriteString("; " + flatWords.Replace(p.Hint))
		}
	}
	return b.String()
}

// checkTasksMax accepts tasks.max=1 only: the worker runs one task per
// connector (the pipeline loader's rule).
func checkTasksMax(name, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil || n < 1:
		return fmt.Errorf("%w: Invalid value %s for configuration %s: must be a positive integer", engine.ErrBadRequest, v, keyTasksMax)
	case n > 1:
		return fmt.Errorf("%w: connector %s asks for %d tasks (%s=%s); this worker runs one task per connector (set %s=1, or run several workers on the kafka backend)",
			engine.ErrBadRequest, name, n, keyTasksMax, v, keyTasksMax)
	}
	return nil
}

func intValue(k, v string, least int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < least {
		return 0, fmt.Errorf("%w: Invalid value %s for configuration %s: must be an integer of at least %d", engine.ErrBadRequest, v, k, least)
	}
	return n, nil
}

func msValue(k, v string) (time.Duration, error) {
	n, err := intValue(k, v, 0)
	return time.Duration(n) * time.Millisecond, err
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
// setting, topics.regex), so that PUT of the answer changes nothing. With
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
