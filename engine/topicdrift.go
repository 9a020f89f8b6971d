package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// topicDrift compares a topic as a pipeline declares it (partitions when
// > 0, and each config it names) with the topic that exists, and returns
// one sentence per difference: what differs and the command that fixes
// it. Configs the backend does not report are not compared.
func topicDrift(name string, partitions int, config map[string]string, got TopicInfo) []string {
	var out []string
	switch {
	case partitions > 0 && got.Partitions < partitions:
		out = append(out, fmt.Sprintf("topic %s has %d partitions, but the pipeline declares %d; add them with `tributary topics alter %s --partitions %d` (keyed records then go to other partitions than before)",
			name, got.Partitions, partitions, name, partitions))
	case partitions > 0 && got.Partitions > partitions:
		out = append(out, fmt.Sprintf("topic %s has %d partitions, but the pipeline declares %d; partitions cannot be removed: declare %d, or delete and recreate the topic",
			name, got.Partitions, partitions, got.Partitions))
	}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		have, ok := got.Config[k]
		if !ok || sameConfig(k, have, config[k]) {
			continue
		}
		out = append(out, fmt.Sprintf("topic %s has %s=%s, but the pipeline declares %s=%s; change it with `tributary topics alter %s --config %s=%s`",
			name, k, have, k, config[k], name, k, config[k]))
	}
	return out
}

// sameConfig reports whether two values of config k mean the same:
// cleanup.policy is a set ("compact,delete" = "delete,compact").
func sameConfig(k, a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if k != "cleanup.policy" {
		return a == b
	}
	set := func(s string) []string {
		var out []string
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(set(a), set(b))
}

// ensureDeclaredTopic creates a topic a pipeline declares, or, when it
// exists and the backend can describe it (TopicDescriber), compares it
// with the declaration: each difference is logged as a warning and
// returned, for the status of the pipeline's connectors. A topic that
// cannot be described is not compared (logged).
func (w *Worker) ensureDeclaredTopic(ctx context.Context, pipeline, name string, partitions int, config map[string]string) ([]string, error) {
	if err := w.opts.Backend.EnsureTopic(ctx, name, partitions, config); err != nil {
		return nil, err
	}
	td, ok := w.opts.Backend.(TopicDescriber)
	if !ok {
		return nil, nil
	}
	got, err := td.DescribeTopic(ctx, name)
	if err != nil {
		w.logger.Warn("cannot compare the topic with the pipeline's declaration", "pipeline", pipeline, "topic", name, "error", err)
		return nil, nil
	}
	drift := topicDrift(name, partitions, config, got)
	for _, d := range drift {
		w.logger.Warn("topic differs from the pipeline's declaration; the existing topic is used as it is", "pipeline", pipeline, "topic", name, "difference", d)
	}
	return drift, nil
}

// setTopicWarnings records the differences between the topics a pipeline
// declares and those that exist, replacing what an earlier start found.
func (w *Worker) setTopicWarnings(pipeline string, warnings []string) {
	w.topicMu.Lock()
	defer w.topicMu.Unlock()
	if len(warnings) == 0 {
		delete(w.topicWarnings, pipeline)
		return
	}
	w.topicWarnings[pipeline] = warnings
}

// pipelineTopicWarnings returns what setTopicWarnings recorded for a
// pipeline.
func (w *Worker) pipelineTopicWarnings(pipeline string) []string {
	w.topicMu.Lock()
	defer w.topicMu.Unlock()
	return w.topicWarnings[pipeline]
}
