package pipelines

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadFile_Quickstart(t *testing.T) {
	got, err := LoadFile("testdata/valid/quickstart.yaml", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/valid/quickstart.yaml"
	want := &Pipeline{
		Name: "quickstart",
		File: file,
		Log:  Log{Backend: BackendEmbedded, Dir: "./data", Defaults: TopicDefaults{Partitions: 3}},
		Topics: []Topic{{
			Name: "web.tracking", Partitions: 3,
			Config: map[string]string{"retention.ms": "604800000"},
			Pos:    Pos{file, 9, 5},
		}},
		Sources: []Source{{
			Name: "web-events", Connector: "generator", Topic: "web.tracking", Tasks: 1,
			Config: map[string]string{"rate": "1000", "seed": "42"},
			Pos:    Pos{file, 13, 5},
		}},
		Sinks: []Sink{{
			Name: "events-file", Connector: "file", Topics: []string{"web.tracking"},
			Group: "events-file", Tasks: 1,
			Config: map[string]string{"path": "./data/out/events.jsonl"},
			Errors: ErrorPolicy{
				Tolerance:  ToleranceAll,
				Retries:    5,
				Backoff:    Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second},
				DeadLetter: DeadLetter{Topic: "dlq.events-file"},
			},
			Pos: Pos{file, 18, 5},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%#v\nwant\n%#v", got, want)
	}
}

func TestLoadFile_CDC(t *testing.T) {
	p, err := LoadFile("testdata/valid/cdc.yaml", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	src, sink := p.Sources[0], p.Sinks[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"log dir", p.Log.Dir, "/var/lib/tributary"},
		{"default sizes in bytes", p.Log.Defaults.Config, map[string]string{"retention.bytes": "10737418240", "segment.bytes": "268435456"}},
		{"topic config over defaults", p.Topics[0].Config, map[string]string{"cleanup.policy": "compact", "retention.bytes": "10737418240", "segment.bytes": "268435456"}},
		{"default partitions", p.Topics[0].Partitions, 6},
		{"own partitions", p.Topics[1].Partitions, 12},
		{"template topic", src.Topic, "cdc.{schema}.{table}"},
		{"env default", src.Config["url"], "postgres://replicator@localhost:5432/shop"},
		{"env value", src.Config["password"], "s3cret-pw"},
		{"list joined", src.Config["tables"], "public.customers,public.orders"},
		{"source secrets", src.Secrets, []string{"password"}},
		{"transform", src.Transforms[0].Type + " " + src.Transforms[0].Config["condition"], "filter op != 'r'"},
		{"sink secrets", sink.Secrets, []string{"token", "url"}},
		{"sink tasks", sink.Tasks, 1},
		{"transform without settings", sink.Transforms[0].Config, map[string]string{}},
		{"transform list", sink.Transforms[1].Config["fields"], "email,phone"},
		{"merged errors", sink.Errors, ErrorPolicy{Tolerance: ToleranceAll, Retries: 3, Backoff: Backoff{250 * time.Millisecond, 30 * time.Second}, DeadLetter: DeadLetter{"dlq.crm-webhook"}}},
		{"plugin dirs", p.Plugins.Dirs, []string{"./plugins", "/opt/tributary/plugins"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestParse_Defaults(t *testing.T) {
	p, err := Parse("dir/minimal.yaml", []byte(`
version: 1
topics: [{name: t}]
sinks:
  - name: out
    connector: stdout
    topics: [t]
`), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	want := &Pipeline{
		Name:   "minimal",
		File:   "dir/minimal.yaml",
		Log:    Log{Backend: BackendEmbedded, Dir: "./data", Defaults: TopicDefaults{Partitions: 1}},
		Topics: []Topic{{Name: "t", Partitions: 1, Config: map[string]string{}, Pos: Pos{"dir/minimal.yaml", 3, 10}}},
		Sinks: []Sink{{
			Name: "out", Connector: "stdout", Topics: []string{"t"}, Group: "out", Tasks: 1,
			Config: map[string]string{},
			Errors: ErrorPolicy{Tolerance: ToleranceNone, Retries: DefaultRetries, Backoff: Backoff{DefaultBackoffInitial, DefaultBackoffMax}},
			Pos:    Pos{"dir/minimal.yaml", 5, 5},
		}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got\n%#v\nwant\n%#v", p, want)
	}
}

func TestParse_Kafka(t *testing.T) {
	p, err := Parse("k.yaml", []byte(`
version: 1
log:
  backend: kafka
  kafka: {brokers: ["localhost:9092", "[::1]:9093"]}
`), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Log.Backend, BackendKafka; got != want {
		t.Errorf("backend: got %q, want %q", got, want)
	}
	if got, want := p.Log.Kafka.Brokers, []string{"localhost:9092", "[::1]:9093"}; !reflect.DeepEqual(got, want) {
		t.Errorf("brokers: got %q, want %q", got, want)
	}
}

func TestParse_WithoutCatalog(t *testing.T) {
	// Without a catalog only the shape is checked, so that plugins.dirs can
	// be read before the plugins are loaded.
	p, err := Parse("p.yaml", []byte(`
version: 1
plugins: {dirs: [./plugins]}
sources:
  - {name: s, connector: from-a-plugin, topic: t, config: {anything: 1}}
`), Options{LookupEnv: testEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Plugins.Dirs, []string{"./plugins"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dirs: got %q, want %q", got, want)
	}
}

func TestParse_TopicsRegex(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`
version: 1
sinks:
  - {name: all-cdc, connector: stdout, topics_regex: 'cdc\..*'}
`), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Sinks[0].TopicsRegex, `cdc\..*`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestParse_Linger reads a source's linger: a duration, 0 by default and
// when written as 0.
func TestParse_Linger(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nsources:\n  - {name: a, connector: generator, topic: t, linger: 5ms}\n  - {name: b, connector: generator, topic: t, linger: 0}\n  - {name: c, connector: generator, topic: t}\n"), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{5 * time.Millisecond, 0, 0} {
		if got := p.Sources[i].Linger; got != want {
			t.Errorf("source %s: linger %v, want %v", p.Sources[i].Name, got, want)
		}
	}
}

func TestParse_ProducedTopics(t *testing.T) {
	// A sink may read a topic that nothing defines under topics: when a
	// source, a source's route transform or a dead-letter queue writes it,
	// or when a source writes to a template.
	tests := []struct {
		name, yaml string
	}{
		{"source topic", `
version: 1
sources: [{name: s, connector: generator, topic: t}]
sinks: [{name: k, connector: stdout, topics: [t]}]
`},
		{"route transform", `
version: 1
sources: [{name: s, connector: generator, topic: t, transforms: [{type: route, topic: other}]}]
sinks: [{name: k, connector: stdout, topics: [other]}]
`},
		{"template", `
version: 1
sources: [{name: s, connector: generator, topic: "cdc.{table}"}]
sinks: [{name: k, connector: stdout, topics: [cdc.orders]}]
`},
		{"dead-letter queue", `
version: 1
topics: [{name: t}]
sinks:
  - {name: k, connector: stdout, topics: [t], errors: {tolerance: all, deadletter: {topic: dlq}}}
  - {name: dlq-reader, connector: stdout, topics: [dlq]}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse("p.yaml", []byte(tt.yaml), testOpts); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestParse_Errors checks each kind of problem: its position, message and
// hint, exactly.
func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty file", ``, []string{
			`p.yaml:1:1: file is empty; a pipeline file is a mapping that starts with version: 1`,
		}},
		{"only comments", "# nothing here\n", []string{
			`p.yaml:1:1: file is empty; a pipeline file is a mapping that starts with version: 1`,
		}},
		{"top level list", "- version: 1\n", []string{
			`p.yaml:1:1: expected a mapping (key: value) at the top level, got a list; a pipeline file is a mapping that starts with version: 1`,
		}},
		{"top level scalar", "hello\n", []string{
			`p.yaml:1:1: expected a mapping (key: value) at the top level, got "hello"; a pipeline file is a mapping that starts with version: 1`,
		}},
		{"missing version", "name: x\n", []string{
			`p.yaml:1:1: version: missing required key "version"; add version: 1 as the first line`,
		}},
		{"unsupported version", "version: 2\nname: x\nbogus: 1\n", []string{
			`p.yaml:1:10: version: unsupported version 2; this version of Tributary reads version 1`,
			`p.yaml:3:1: bogus: unknown key "bogus" in a pipeline; valid keys: version, name, log, topics, sources, sinks, plugins`,
		}},
		{"version not a number", "version: one\n", []string{
			`p.yaml:1:10: version: expected an integer ≥ 1, got "one"`,
		}},
		{"second document", "version: 1\n---\nversion: 1\n", []string{
			`p.yaml:2:1: a second YAML document starts here; a pipeline file holds one document; put each pipeline in a file of its own`,
		}},
		{"unknown top-level key", "version: 1\nsink: []\n", []string{
			`p.yaml:2:1: sink: unknown key "sink" in a pipeline; did you mean "sinks"? valid keys: version, name, log, topics, sources, sinks, plugins`,
		}},
		{"extension keys are ignored", "version: 1\nx-anchors: {a: 1}\n", nil},
		{"duplicate key", "version: 1\nname: a\nname: b\n", []string{
			`p.yaml:3:1: name: key "name" is given twice (first at 2:1); remove one of them`,
		}},
		{"invalid pipeline name", "version: 1\nname: my pipeline\n", []string{
			`p.yaml:2:7: name: invalid pipeline name "my pipeline"; use letters, digits, '.', '_' and '-', at most 249 characters`,
		}},
		{"list where a mapping is expected", "version: 1\nlog: [embedded]\n", []string{
			`p.yaml:2:6: log: log must be a mapping (key: value), got a list; keys: backend, dir, kafka, defaults`,
		}},
		{"mapping where a list is expected", "version: 1\nsources: {name: x}\n", []string{
			`p.yaml:2:10: sources: sources must be a list, got a mapping; write each entry on a line starting with '- '`,
		}},
		{"scalar where a list of topics is expected", `
version: 1
topics: [{name: t}]
sinks:
  - {name: k, connector: stdout, topics: t}
`, []string{
			`p.yaml:4:42: sinks[0].topics: expected a list of topic names, got "t"; write a list: [t]`,
		}},
		{"unknown backend", "version: 1\nlog: {backend: embeded}\n", []string{
			`p.yaml:2:16: log.backend: unknown log backend "embeded"; did you mean "embedded"? valid backends: embedded, kafka`,
		}},
		{"kafka without brokers", "version: 1\nlog: {backend: kafka}\n", []string{
			`p.yaml:2:16: log.backend: backend kafka needs log.kafka.brokers; e.g. kafka: {brokers: [localhost:9092]}`,
		}},
		{"broker without port", "version: 1\nlog: {backend: kafka, kafka: {brokers: [localhost]}}\n", []string{
			`p.yaml:2:41: log.kafka.brokers[0]: broker "localhost" is not a host:port address; e.g. localhost:9092`,
		}},
		{"partitions below 1", "version: 1\ntopics:\n  - name: t\n    partitions: 0\n", []string{
			`p.yaml:4:17: topics[0].partitions: expected an integer ≥ 1, got "0"`,
		}},
		{"partitions not an integer", "version: 1\ntopics:\n  - {name: t, partitions: 2.5}\n", []string{
			`p.yaml:3:27: topics[0].partitions: expected an integer ≥ 1, got "2.5"`,
		}},
		{"unknown topic config", "version: 1\ntopics:\n  - name: t\n    config: {retention.hours: 5}\n", []string{
			`p.yaml:4:14: topics[0].config.retention.hours: unknown setting "retention.hours" for topics; did you mean "retention.bytes"? valid settings: cleanup.policy, compression.type, delete.retention.ms, max.message.bytes, message.timestamp.type, min.cleanable.dirty.ratio, min.compaction.lag.ms, min.insync.replicas, retention.bytes, retention.ms, segment.bytes, segment.ms`,
		}},
		{"bad size", "version: 1\ntopics:\n  - name: t\n    config: {segment.bytes: 64 megs}\n", []string{
			`p.yaml:4:29: topics[0].config.segment.bytes: "64 megs" has an unknown size unit "megs" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB); segment.bytes: size at which a new segment file is started (size)`,
		}},
		{"bad enum in topic config", "version: 1\ntopics:\n  - name: t\n    config: {cleanup.policy: compacted}\n", []string{
			`p.yaml:4:30: topics[0].config.cleanup.policy: "compacted" is not a valid cleanup.policy: must be one of delete, compact, or both comma-separated (compact,delete); delete old segments, compact by key, or both`,
		}},
		{"duplicate topic", "version: 1\ntopics:\n  - name: t\n  - name: t\n", []string{
			`p.yaml:4:11: topics[1].name: topic "t" is already defined at 3:11; define each topic once`,
		}},
		{"invalid topic name", "version: 1\ntopics:\n  - name: 'web tracking'\n", []string{
			`p.yaml:3:11: topics[0].name: invalid topic name "web tracking"; use letters, digits, '.', '_' and '-', at most 249 characters`,
		}},
		{"template outside a source", "version: 1\ntopics:\n  - name: 'cdc.{table}'\n", []string{
			`p.yaml:3:11: topics[0].name: invalid topic name "cdc.{table}"; templates such as {table} are only allowed in a source's topic`,
		}},
		{"missing required keys", "version: 1\nsources:\n  - name: s\nsinks:\n  - connector: stdout\n", []string{
			`p.yaml:3:5: sources[0]: missing required key "connector" in a source`,
			`p.yaml:3:5: sources[0]: missing required key "topic" in a source`,
			`p.yaml:5:5: sinks[0]: missing required key "name" in a sink`,
			`p.yaml:5:5: sinks[0]: missing required key "topics" (or "topics_regex") in a sink; e.g. topics: [web.tracking]`,
		}},
		{"empty required value", "version: 1\nsources:\n  - {name: s, connector: '', topic: t}\n", []string{
			`p.yaml:3:26: sources[0].connector: connector must not be empty`,
		}},
		{"unknown key with suggestion", "version: 1\nsinks:\n  - name: k\n    connector: stdout\n    topic: [t]\n", []string{
			`p.yaml:3:5: sinks[0]: missing required key "topics" (or "topics_regex") in a sink; e.g. topics: [web.tracking]`,
			`p.yaml:5:5: sinks[0].topic: unknown key "topic" in a sink; did you mean "topics"? valid keys: name, connector, topics, topics_regex, group, tasks, config, transforms, errors`,
		}},
		{"unknown connector", "version: 1\nsources:\n  - {name: s, connector: genrator, topic: t}\n", []string{
			`p.yaml:3:26: sources[0].connector: unknown source connector "genrator"; did you mean "generator"? valid source connectors: generator, postgres`,
		}},
		{"sink connector as a source", "version: 1\nsources:\n  - {name: s, connector: file, topic: t}\n", []string{
			`p.yaml:3:26: sources[0].connector: "file" is a sink connector, not a source connector; valid source connectors: generator, postgres`,
		}},
		{"unknown connector setting", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, config: {rates: 5}}\n", []string{
			`p.yaml:3:56: sources[0].config.rates: unknown setting "rates" for source connector "generator"; did you mean "rate"? valid settings: event_size, rate, seed`,
		}},
		{"missing required setting", "version: 1\ntopics: [{name: t}]\nsinks:\n  - name: k\n    connector: file\n    topics: [t]\n    config:\n      fsync: true\n", []string{
			`p.yaml:7:5: sinks[0].config: missing required setting "path" of sink connector "file"; path: the file to append to (string)`,
		}},
		{"missing required setting without config", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: file, topics: [t]}\n", []string{
			`p.yaml:4:26: sinks[0].config: missing required setting "path" of sink connector "file"; path: the file to append to (string)`,
		}},
		{"empty required setting", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: file, topics: [t], config: {path: ''}}\n", []string{
			`p.yaml:4:60: sinks[0].config.path: required setting "path" of sink connector "file" has no value; path: the file to append to (string)`,
		}},
		{"bad setting value", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, config: {rate: fast}}\n", []string{
			`p.yaml:3:62: sources[0].config.rate: "fast" is not an integer; rate: events per second (int)`,
		}},
		{"bad enum setting", "version: 1\nsources:\n  - {name: s, connector: postgres, topic: t, config: {url: x, snapshot: intial}}\n", []string{
			`p.yaml:3:73: sources[0].config.snapshot: "intial" is not one of: initial, never; did you mean "initial"? snapshot: whether to snapshot first (string, one of: initial, never)`,
		}},
		{"nested mapping in config", "version: 1\nsources:\n  - name: s\n    connector: generator\n    topic: t\n    config:\n      rate: {per: second}\n", []string{
			`p.yaml:7:13: sources[0].config.rate: expected a value or a list of values, got a mapping; nested settings are not supported; write the name in full, e.g. rate.<name>: value`,
		}},
		{"comma in a list item", "version: 1\nsources:\n  - {name: s, connector: postgres, topic: t, config: {url: x, tables: ['a,b', c]}}\n", []string{
			`p.yaml:3:72: sources[0].config.tables[0]: list item contains a comma; list values are joined with commas`,
		}},
		{"config not a mapping", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, config: [rate]}\n", []string{
			`p.yaml:3:55: sources[0].config: config must be a mapping, got a list; write settings as key: value lines, or {key: value, ...}`,
		}},
		{"unknown transform", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, transforms: [{type: mask}, {type: fitler}]}\n", []string{
			`p.yaml:3:67: sources[0].transforms[0]: missing required setting "fields" of transform "mask"; fields: fields to mask (list)`,
			`p.yaml:3:81: sources[0].transforms[1].type: unknown transform "fitler"; did you mean "filter"? valid transforms: filter, mask, route, unwrap`,
		}},
		{"transform without type", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, transforms: [{fields: [a]}]}\n", []string{
			`p.yaml:3:60: sources[0].transforms[0]: missing required key "type" in a transform; write {type: <transform>, <setting>: <value>, ...}`,
		}},
		{"transform setting typo", "version: 1\nsources:\n  - name: s\n    connector: generator\n    topic: t\n    transforms:\n      - type: filter\n        conditon: x\n", []string{
			`p.yaml:7:15: sources[0].transforms[0]: missing required setting "condition" of transform "filter"; condition: keep records that match (string)`,
			`p.yaml:8:9: sources[0].transforms[0].conditon: unknown setting "conditon" for transform "filter"; did you mean "condition"? valid settings: condition`,
		}},
		{"transform not a mapping", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, transforms: [unwrap]}\n", []string{
			`p.yaml:3:60: sources[0].transforms[0]: a transform must be a mapping (key: value), got "unwrap"; write {type: <transform>, <setting>: <value>, ...}`,
		}},
		{"duplicate connector names", "version: 1\ntopics: [{name: t}]\nsources:\n  - {name: a, connector: generator, topic: t}\nsinks:\n  - {name: a, connector: stdout, topics: [t]}\n", []string{
			`p.yaml:6:12: sinks[0].name: name "a" is already used by source a at 4:12; a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them`,
		}},
		{"duplicate groups", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: a, connector: stdout, topics: [t]}\n  - {name: b, connector: stdout, topics: [t], group: a}\n", []string{
			`p.yaml:5:54: sinks[1].group: consumer group "a" is already used by sink a at 4:12; two sinks in one group split its partitions, each skipping the records the other was given: give each sink a group of its own (group:)`,
		}},
		{"sink reads an unknown topic", "version: 1\ntopics: [{name: web.tracking}]\nsinks:\n  - {name: k, connector: stdout, topics: [web.trackng]}\n", []string{
			`p.yaml:4:43: sinks[0].topics[0]: topic "web.trackng" is not defined under topics and no source writes it; did you mean "web.tracking"? valid topics: web.tracking`,
		}},
		{"sink reads when there are no topics", "version: 1\nsinks:\n  - {name: k, connector: stdout, topics: [t]}\n", []string{
			`p.yaml:3:43: sinks[0].topics[0]: topic "t" is not defined under topics and no source writes it; there are no topics`,
		}},
		{"topic listed twice", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: stdout, topics: [t, t]}\n", []string{
			`p.yaml:4:46: sinks[0].topics[1]: topic "t" is listed twice`,
		}},
		{"no topics", "version: 1\nsinks:\n  - {name: k, connector: stdout, topics: []}\n", []string{
			`p.yaml:3:42: sinks[0].topics: topics must name at least one topic; e.g. topics: [web.tracking]`,
		}},
		{"topics and regex", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: stdout, topics: [t], topics_regex: x}\n", []string{
			`p.yaml:4:47: sinks[0].topics_regex: topics and topics_regex exclude each other; keep one of them`,
		}},
		{"bad regex", "version: 1\nsinks:\n  - {name: k, connector: stdout, topics_regex: 'a('}\n", []string{
			"p.yaml:3:48: sinks[0].topics_regex: invalid regular expression: error parsing regexp: missing closing ): `a(`; Go regular expression syntax (RE2)",
		}},
		{"tasks below 1", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, tasks: 0}\n", []string{
			`p.yaml:3:54: sources[0].tasks: expected an integer ≥ 1, got "0"`,
		}},
		{"linger not a duration", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, linger: 5}\n", []string{
			`p.yaml:3:55: sources[0].linger: expected a duration such as 5ms (0 appends at once), got "5"; a number needs a unit: ns, us, ms, s, m, h`,
		}},
		{"linger negative", "version: 1\nsources:\n  - {name: s, connector: generator, topic: t, linger: -5ms}\n", []string{
			`p.yaml:3:55: sources[0].linger: expected a duration such as 5ms (0 appends at once), got "-5ms"; a linger cannot be negative`,
		}},
		{"errors block", `
version: 1
topics: [{name: t}]
sinks:
  - name: k
    connector: stdout
    topics: [t]
    errors:
      tolerance: some
      retries: -2
      backoff: {initial: 100, max: 1x, jitter: yes}
      deadletter: {topic: t}
`, []string{
			`p.yaml:8:18: sinks[0].errors.tolerance: unknown error tolerance "some"; did you mean "none"? valid tolerances: none, all`,
			`p.yaml:9:16: sinks[0].errors.retries: expected an integer ≥ -1, got "-2"`,
			`p.yaml:10:26: sinks[0].errors.backoff.initial: expected a duration such as 500ms, 10s or 1m30s, got "100"; a number needs a unit: ns, us, ms, s, m, h`,
			`p.yaml:10:36: sinks[0].errors.backoff.max: expected a duration such as 500ms, 10s or 1m30s, got "1x"; units: ns, us, ms, s, m, h`,
			`p.yaml:10:40: sinks[0].errors.backoff.jitter: unknown key "jitter" in errors.backoff; valid keys: initial, max`,
			`p.yaml:11:7: sinks[0].errors.deadletter: a dead-letter topic is only used with tolerance: all; set tolerance: all, or remove deadletter`,
			`p.yaml:11:27: sinks[0].errors.deadletter.topic: dead-letter topic "t" is also a topic the sink reads; use a topic of its own, e.g. dlq.k`,
		}},
		{"backoff max below initial", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: stdout, topics: [t], errors: {backoff: {initial: 2s, max: 1s}}}\n", []string{
			`p.yaml:4:84: sinks[0].errors.backoff.max: backoff max 1s is less than initial 2s`,
		}},
		{"deadletter without topic", "version: 1\ntopics: [{name: t}]\nsinks:\n  - {name: k, connector: stdout, topics: [t], errors: {tolerance: all, deadletter: {}}}\n", []string{
			`p.yaml:4:84: sinks[0].errors.deadletter: missing required key "topic" in errors.deadletter`,
		}},
		{"plugins", "version: 1\nplugins: {dir: [a]}\n", []string{
			`p.yaml:2:11: plugins.dir: unknown key "dir" in plugins; did you mean "dirs"? valid keys: dirs, sha256, call_timeout`,
		}},
		{"unused merge key cycle", "version: 1\nx-a: &a {<<: *a}\n", nil},
		{"merge key cycle", "version: 1\nlog: &l {<<: *l}\n", []string{
			`p.yaml:2:6: log: merge keys (<<) nest deeper than 32 levels`,
		}},
		{"merge of a list", "version: 1\nlog: {<<: [a]}\n", []string{
			`p.yaml:2:12: log: a merge key (<<) takes a mapping or a list of mappings, got "a"`,
		}},
		{"key that is not a name", "version: 1\n[a]: 1\n", []string{
			`p.yaml:2:1: a key must be a plain name, got a list`,
		}},
		{"merged keys", "version: 1\nx-log: &log {dir: ./x, backend: kafkaa}\nlog:\n  <<: *log\n", []string{
			`p.yaml:2:33: log.backend: unknown log backend "kafkaa"; did you mean "kafka"? valid backends: embedded, kafka`,
		}},
		{"anchored source used twice", "version: 1\nsources:\n  - &s {name: s, connector: generator, topic: t}\n  - *s\n", []string{
			`p.yaml:3:15: sources[1].name: "s" is used twice: the same anchored entry (*alias) appears twice; a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(strings.TrimPrefix(tt.yaml, "\n")), testOpts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got error:\n%v", err)
				}
				return
			}
			if p != nil {
				t.Errorf("got a pipeline with errors")
			}
			if err == nil {
				t.Fatalf("got no error, want:\n%s", strings.Join(tt.want, "\n"))
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s\nat:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), annotate(tt.yaml, errorList(t, err)))
			}
		})
	}
}

// TestParse_ErrorFields checks that the entries of the ErrorList carry the
// position, path, message and hint apart.
func TestParse_DefaultName(t *testing.T) {
	_, err := Parse("dir/my pipeline.yaml", []byte("version: 1\n"), testOpts)
	want := `dir/my pipeline.yaml:1:1: name: missing required key "name" (the file name "my pipeline" is not a valid pipeline name); add name: <pipeline name>`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestParse_MergeBomb checks that merge keys that expand exponentially are
// cut off quickly.
func TestParse_MergeBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nx-0: &m0 {dir: x}\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "x-%d: &m%d {<<: [*m%d, *m%d, *m%d]}\n", i, i, i-1, i-1, i-1)
	}
	b.WriteString("log: *m30\n")
	start := time.Now()
	_, err := Parse("p.yaml", []byte(b.String()), testOpts)
	if err == nil || !strings.Contains(err.Error(), "merge keys (<<) expand to more than") {
		t.Errorf("got %v, want a merge limit error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestParse_ErrorFields(t *testing.T) {
	_, err := Parse("p.yaml", []byte("version: 1\nsink: []\n"), testOpts)
	list := errorList(t, err)
	want := ErrorList{{
		Pos:     Pos{File: "p.yaml", Line: 2, Column: 1},
		Path:    "sink",
		Message: `unknown key "sink" in a pipeline`,
		Hint:    `did you mean "sinks"? valid keys: version, name, log, topics, sources, sinks, plugins`,
	}}
	if !reflect.DeepEqual(list, want) {
		t.Errorf("got %#v, want %#v", list, want)
	}
	var one *Error
	if !errors.As(err, &one) || one.Line != 2 {
		t.Errorf("errors.As(*Error): got %v", one)
	}
}

// TestLoadFile_Golden loads the files in testdata/invalid and compares the
// errors with the .err file beside each. Run with -update to rewrite them.
func TestLoadFile_Golden(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, err := LoadFile(file, testOpts)
			if err == nil {
				t.Fatal("got no error")
			}
			errorList(t, err)
			golden := strings.TrimSuffix(file, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(err.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(golden)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if got := err.Error() + "\n"; got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestLoadFile_NotFound(t *testing.T) {
	_, err := LoadFile("testdata/nope.yaml", testOpts)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error wrapping os.ErrNotExist", err)
	}
}

func TestLoadDir(t *testing.T) {
	ps, err := LoadDir("testdata/dir", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name+" "+p.File)
	}
	want := []string{
		"archive " + filepath.Join("testdata/dir", "archive.yml"),
		"web " + filepath.Join("testdata/dir", "web.yaml"),
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}

func TestLoadDir_Conflicts(t *testing.T) {
	_, err := LoadDir("testdata/dir-conflict", testOpts)
	want := []string{
		`testdata/dir-conflict/b.yaml:2:7: name: pipeline name "shared" is already used in testdata/dir-conflict/a.yaml:2:7; pipeline names must be unique across the files of a directory`,
		`testdata/dir-conflict/b.yaml:3:1: log: log settings differ from those of testdata/dir-conflict/a.yaml; the pipelines of a directory share one log: give every file the same backend, dir and kafka settings`,
		`testdata/dir-conflict/b.yaml:6:11: topics[0].name: topic "clicks" is already defined in testdata/dir-conflict/a.yaml:4:11; define each topic once`,
		`testdata/dir-conflict/b.yaml:8:11: sinks[0].name: name "clicks-file" is already used by sink clicks-file of pipeline shared in testdata/dir-conflict/a.yaml:10:11; a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them`,
		`testdata/dir-conflict/b.yaml:10:14: sinks[0].topics[0]: topic "views" is not defined under topics and no source writes it; valid topics: clicks`,
	}
	if err == nil {
		t.Fatal("got no error")
	}
	if got := strings.Split(errorList(t, err).Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A worker knows its connectors by name alone, as Kafka Connect does (the
// REST API's /connectors/{name}, status, offsets, pause): two pipelines of
// a directory may not both have a connector of one name, nor two sinks one
// consumer group (they would split its partitions, each skipping the
// records the other was given). Each error names both places, what holds
// the name there, and how to fix it; all come at once, with the other
// errors of the directory.
func TestLoadDir_ConnectorNamesAndGroupsAcrossFiles(t *testing.T) {
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
  - {name: gen, connector: generator, topic: t.a}
sinks:
  - {name: out, connector: stdout, topics: [t.a]}
`)
	write("b.yaml", `version: 1
name: beta
topics: [{name: t.b}]
sources:
  - {name: gen, connector: generator, topic: t.b}
  - {name: out, connector: generator, topic: t.b}
sinks:
  - {name: copy, connector: stdout, topics: [t.b], group: out}
`)
	write("c.yaml", "version: 1\nname: gamma\nbogus: 1\n")
	_, err := LoadDir(dir, testOpts)
	if err == nil {
		t.Fatal("got no error")
	}
	a, b, c := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "c.yaml")
	const rename = "a worker knows a connector by its name alone (REST: /connectors/NAME), as Kafka Connect does: rename one of them"
	want := []string{
		b + `:5:12: sources[0].name: name "gen" is already used by source gen of pipeline alpha in ` + a + `:5:12; ` + rename,
		b + `:6:12: sources[1].name: name "out" is already used by sink out of pipeline alpha in ` + a + `:7:12; ` + rename,
		b + `:8:59: sinks[0].group: consumer group "out" is already used by sink out of pipeline alpha in ` + a + `:7:12; ` +
			"two sinks in one group split its partitions, each skipping the records the other was given: give each sink a group of its own (group:)",
		c + `:3:1: bogus: unknown key "bogus" in a pipeline; valid keys: version, name, log, topics, sources, sinks, plugins`,
	}
	if got := strings.Split(errorList(t, err).Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadDir_ErrorsOfAllFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "version: 1\nbogus: 1\n")
	write("b.yml", "version: 1\nname: [x]\n")
	write("c.yaml", "version: 1\n  bad: indent\n")
	write(".hidden.yaml", "not even yaml: [")
	_, err := LoadDir(dir, testOpts)
	if err == nil {
		t.Fatal("got no error")
	}
	var files []string
	for _, e := range errorList(t, err) {
		files = append(files, filepath.Base(e.File))
	}
	if want := []string{"a.yaml", "b.yml", "c.yaml"}; !reflect.DeepEqual(files, want) {
		t.Errorf("got errors in %q, want %q:\n%v", files, want, err)
	}
}

func TestLoadDir_Empty(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadDir(dir, testOpts)
	want := dir + ": no pipeline files (*.yaml, *.yml) in directory"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestParse_KafkaListen(t *testing.T) {
	ok := "version: 1\nlog:\n  kafka: {listen: 127.0.0.1:9092}\n"
	p, err := Parse("p.yaml", []byte(ok), Options{})
	if err != nil || p.Log.Kafka.Listen != "127.0.0.1:9092" || p.Log.Kafka.NoAutoCreateTopics {
		t.Fatalf("Parse = %+v, %v", p, err)
	}
	p, err = Parse("p.yaml", []byte("version: 1\nlog:\n  kafka: {listen: 127.0.0.1:9092, auto_create_topics: false}\n"), Options{})
	if err != nil || !p.Log.Kafka.NoAutoCreateTopics {
		t.Fatalf("auto_create_topics: false: Parse = %+v, %v", p, err)
	}
	for bad, pos := range map[string]string{
		"version: 1\nlog:\n  kafka: {listen: nope}\n":                                                "p.yaml:3:19:",
		"version: 1\nlog:\n  backend: kafka\n  kafka: {brokers: [k:9092], listen: 127.0.0.1:9092}\n": "p.yaml:4:38:",
		"version: 1\nlog:\n  kafka: {listen: 127.0.0.1:9092, auto_create_topics: nope}\n":            "p.yaml:3:55:",
		"version: 1\nlog:\n  kafka: {auto_create_topics: false}\n":                                   "p.yaml:3:11:",
	} {
		if _, err := Parse("p.yaml", []byte(bad), Options{}); err == nil || !strings.Contains(err.Error(), pos) {
			t.Errorf("Parse(%q) = %v, want an error at %s", bad, err, pos)
		}
	}
}

func TestParse_KafkaSessionTimeout(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nlog:\n  backend: kafka\n  kafka: {brokers: [k:9092], session_timeout: 10s}\n"), Options{})
	if err != nil || p.Log.Kafka.SessionTimeout != 10*time.Second {
		t.Fatalf("Parse = %+v, %v", p, err)
	}
	for bad, want := range map[string]string{
		"version: 1\nlog:\n  backend: kafka\n  kafka: {brokers: [k:9092], session_timeout: 2s}\n":   "p.yaml:4:47: log.kafka.session_timeout: session timeout 2s is out of range",
		"version: 1\nlog:\n  backend: kafka\n  kafka: {brokers: [k:9092], session_timeout: soon}\n": "p.yaml:4:47:",
		"version: 1\nlog:\n  kafka: {session_timeout: 10s}\n":                                       "p.yaml:3:11: log.kafka.session_timeout: log.kafka.session_timeout applies to the kafka backend",
	} {
		if _, err := Parse("p.yaml", []byte(bad), Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", bad, err, want)
		}
	}
}

func TestParse_KafkaTLSAndSASL(t *testing.T) {
	t.Setenv("KAFKA_PW", "s3cret-pw")
	t.Setenv("ALICE_PW", "alice-pw")
	p, err := Parse("p.yaml", []byte(`version: 1
log:
  backend: kafka
  kafka:
    brokers: [k:9093]
    tls: {ca: ca.pem, cert: c.pem, key: c.key, server.name: kafka.internal}
    sasl: {mechanism: SCRAM-SHA-512, username: tributary, password: "${KAFKA_PW}"}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := p.Log.Kafka
	if want := (KafkaTLS{CA: "ca.pem", Cert: "c.pem", Key: "c.key", ServerName: "kafka.internal"}); k.TLS == nil || *k.TLS != want {
		t.Errorf("tls = %+v, want %+v", k.TLS, want)
	}
	if k.SASL == nil || k.SASL.Mechanism != "SCRAM-SHA-512" || k.SASL.Username != "tributary" || k.SASL.Password != "s3cret-pw" {
		t.Errorf("sasl = %+v", k.SASL)
	}

	p, err = Parse("p.yaml", []byte(`version: 1
log:
  kafka:
    listen: 127.0.0.1:9093
    tls: {cert: s.pem, key: s.key, ca: clients.pem}
    sasl:
      mechanisms: [SCRAM-SHA-256]
      users: {alice: "${ALICE_PW}", bob: plain-pw}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	k = p.Log.Kafka
	if k.TLS == nil || k.TLS.Cert != "s.pem" || k.TLS.CA != "clients.pem" {
		t.Errorf("listener tls = %+v", k.TLS)
	}
	if want := map[string]string{"alice": "alice-pw", "bob": "plain-pw"}; k.SASL == nil || !reflect.DeepEqual(k.SASL.Users, want) ||
		!reflect.DeepEqual(k.SASL.Mechanisms, []string{"SCRAM-SHA-256"}) {
		t.Errorf("listener sasl = %+v", k.SASL)
	}
	p, err = Parse("p.yaml", []byte("version: 1\nlog:\n  kafka:\n    listen: 127.0.0.1:9093\n    sasl: {users: {a: b}}\n"), Options{})
	if err != nil || !reflect.DeepEqual(p.Log.Kafka.SASL.Mechanisms, SASLMechanisms) {
		t.Errorf("listener mechanisms default: %+v, %v", p.Log.Kafka.SASL, err)
	}
}

func TestParse_KafkaTLSAndSASLErrors(t *testing.T) {
	t.Setenv("KAFKA_PW", "s3cret-pw")
	for _, c := range []struct{ name, yaml, want string }{
		{"mechanism missing", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    sasl: {username: u, password: p}\n",
			`p.yaml:6:5: log.kafka.sasl.mechanism: log.kafka.sasl needs a mechanism; one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"unknown mechanism", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    sasl: {mechanism: SCRAM-SHA-1, username: u, password: p}\n",
			`p.yaml:6:23: log.kafka.sasl.mechanism: unknown SASL mechanism "SCRAM-SHA-1"; one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"password missing", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    sasl: {mechanism: PLAIN, username: u}\n",
			`p.yaml:6:5: log.kafka.sasl: log.kafka.sasl needs username and password`},
		{"listener key on the backend", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    sasl: {mechanism: PLAIN, username: u, password: p, users: {a: b}}\n",
			`p.yaml:6:56: log.kafka.sasl.users: users is a listener setting`},
		{"client key on the listener", "version: 1\nlog:\n  kafka:\n    listen: 127.0.0.1:9092\n    sasl: {username: u, users: {a: b}}\n",
			`p.yaml:5:12: log.kafka.sasl.username: username is a client setting (backend: kafka)`},
		{"listener without users", "version: 1\nlog:\n  kafka:\n    listen: 127.0.0.1:9092\n    sasl: {mechanisms: [PLAIN]}\n",
			`p.yaml:5:5: log.kafka.sasl.users: the listener's SASL needs users`},
		{"empty password", "version: 1\nlog:\n  kafka:\n    listen: 127.0.0.1:9092\n    sasl: {users: {a: \"\"}}\n",
			`p.yaml:5:23: log.kafka.sasl.users.a: user "a" has an empty password`},
		{"listener tls without cert", "version: 1\nlog:\n  kafka:\n    listen: 127.0.0.1:9092\n    tls: {ca: ca.pem}\n",
			`p.yaml:5:5: log.kafka.tls: the Kafka listener's TLS needs cert and key`},
		{"cert without key", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    tls: {cert: c.pem}\n",
			`p.yaml:6:5: log.kafka.tls: log.kafka.tls needs cert and key together`},
		{"tls with nothing to secure", "version: 1\nlog:\n  kafka:\n    tls: {cert: c.pem, key: k.pem}\n",
			`p.yaml:4:5: log.kafka.tls: log.kafka.tls applies to the Kafka listener or the kafka backend, and neither is on`},
		{"unknown tls key", "version: 1\nlog:\n  backend: kafka\n  kafka:\n    brokers: [k:9092]\n    tls: {cafile: x}\n",
			`p.yaml:6:11: log.kafka.tls.cafile: unknown key "cafile" in log.kafka.tls`},
	} {
		_, err := Parse("p.yaml", []byte(c.yaml), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%s: the error shows a password: %v", c.name, err)
		}
	}
}

// Consumer groups starting with _tributary are the worker's own (the kafka
// backend's source leases are groups _tributary-source.PIPELINE.NAME): a
// sink in one would take part in a lease's rebalances. An explicit group
// and a sink name that becomes the group are both refused, where written.
func TestLoadFile_ReservedGroup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(`version: 1
name: p
topics: [{name: t}]
sinks:
  - {name: a, connector: stdout, topics: [t], group: _tributary-source.p.gen}
  - {name: _tributary.b, connector: stdout, topics: [t]}
  - {name: c, connector: stdout, topics: [t], group: tributary-ok}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path, testOpts)
	if err == nil {
		t.Fatal("got no error")
	}
	const hint = "groups starting with _tributary are the worker's own: choose another group (group:)"
	want := []string{
		path + `:5:54: sinks[0].group: consumer group "_tributary-source.p.gen" is reserved; ` + hint,
		path + `:6:12: sinks[1].name: consumer group "_tributary.b" is reserved; ` + hint,
	}
	if got := strings.Split(errorList(t, err).Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
