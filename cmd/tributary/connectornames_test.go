package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A worker knows its connectors by name alone (the REST API's
// /connectors/{name}), as Kafka Connect does: validate and run refuse a
// directory whose pipelines share a connector name or a sink's consumer
// group, each problem naming both places, together with the directory's
// other problems; run refuses before it opens the log.
func TestValidateAndRun_DirRefusesOneConnectorNameInTwoPipelines(t *testing.T) {
	data := t.TempDir()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", `version: 1
name: alpha
topics: [{name: t.a}]
sources:
  - {name: gen, connector: generator, topic: t.a, config: {rate: 10}}
sinks:
  - {name: out, connector: file, topics: [t.a], config: {path: ./a.jsonl}}
`)
	write("b.yaml", `version: 1
name: beta
topics: [{name: t.b}]
sources:
  - {name: gen, connector: generator, topic: t.b, config: {rate: 10}}
sinks:
  - {name: copy, connector: file, topics: [t.b], group: out, config: {path: ./b.jsonl}}
  - {name: out, connector: file, topics: [t.b], config: {path: ./c.jsonl}, bogus: 1}
`)
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, cmd := range []string{"validate", "run"} {
		err := mustFail(t, data, "", cmd, dir)
		wantContains(t, cmd, err.Error(),
			b+`:5:12: sources[0].name: name "gen" is already used by source gen of pipeline alpha in `+a+`:5:12; a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them`,
			b+`:7:57: sinks[0].group: consumer group "out" is already used by sink out of pipeline alpha in `+a+`:7:12; two sinks in one group split its partitions`,
			b+`:8:12: sinks[1].name: name "out" is already used by sink out of pipeline alpha in `+a+`:7:12`,
			b+`:8:76: sinks[1].bogus: unknown key "bogus" in a sink`,
		)
	}
	if entries, err := os.ReadDir(data); err != nil || len(entries) > 0 {
		t.Errorf("data directory after the refused run: %v %v, want it empty", entries, err)
	}
}
