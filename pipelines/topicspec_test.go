package pipelines

import (
	"slices"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// The topic configs a pipeline accepts are the log's: one that validates
// can be created, and every config `topics create --config` takes is
// accepted.
func TestTopicSpec_IsTheLogs(t *testing.T) {
	if got, want := TopicSpec().Names(), tlog.ConfigNames(); !slices.Equal(got, want) {
		t.Errorf("pipeline topic configs %v, log topic configs %v", got, want)
	}
}

func TestParse_TopicConfig_AsTheLog(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\ntopics:\n  - name: t\n    config: {min.cleanable.dirty.ratio: 0.3, cleanup.policy: [compact, delete], segment.bytes: 1MiB}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.ValidateConfig(p.Topics[0].Config); err != nil {
		t.Errorf("the log refuses the configs the pipeline accepted: %v", err)
	}
	if got := p.Topics[0].Config["min.cleanable.dirty.ratio"]; got != "0.3" {
		t.Errorf("min.cleanable.dirty.ratio = %q, want 0.3", got)
	}
	_, err = Parse("p.yaml", []byte("version: 1\ntopics:\n  - name: t\n    config: {min.compaction.lag.hours: 1}\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown setting "min.compaction.lag.hours"`) {
		t.Errorf("a config the log does not know: got %v, want it refused", err)
	}
	_, err = Parse("p.yaml", []byte("version: 1\ntopics:\n  - name: t\n    config: {min.cleanable.dirty.ratio: 2}\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "p.yaml:4:41: topics[0].config.min.cleanable.dirty.ratio") {
		t.Errorf("a value the log refuses: got %v, want it refused at its position", err)
	}
}
