// Package pipelines turns YAML pipeline files into typed, validated
// definitions: which log to use, which topics to create, which sources write
// to them and which sinks read from them, with their transforms and error
// handling. The engine runs what this package returns; it never reads YAML
// itself.
//
// # Loading
//
// [LoadFile] loads one file, [LoadDir] every *.yaml and *.yml file of a
// directory (one pipeline per file, all run by one worker), and [Parse]
// takes the text directly. [Options] carries the [Catalog] of connectors and
// transforms with their connect.Spec, and the environment lookup for ${VAR}.
// A catalog that is also a [TransformBuilder] has every transform built with
// its settings, so that what only a constructor refuses is reported too.
//
// Loading is strict and reports every problem of every file at once, as an
// [ErrorList] of [Error]s, each with file:line:column, the path of the value
// ("sinks[0].errors.tolerance"), what is wrong and a hint naming the valid
// choices and the closest one:
//
//	quickstart.yaml:14:5: sinks[0].topic: unknown key "topic" in a sink; did you mean "topics"? valid keys: name, connector, topics, ...
//
// Problems found: YAML syntax errors, tabs in indentation, invalid UTF-8, an
// empty file, a second document, a top level that is not a mapping, a
// version other than 1, unknown keys, keys given twice, values of the wrong
// type (a list where a mapping is expected, a word where an integer is), bad
// durations and sizes, missing required keys and settings, unknown
// connectors, transforms and backends, settings a connector does not have or
// values its spec rejects, invalid names, duplicate source/sink names,
// topics and consumer groups, and a sink reading a topic that nothing
// defines or produces.
//
// # The file
//
//	version: 1                   # required; the only version
//	name: quickstart             # default: the file name without extension
//	log:
//	  backend: embedded          # embedded (default) or kafka
//	  dir: ./data                # embedded log's data directory; default ./data
//	  kafka:
//	    brokers: [localhost:9092] # required with backend: kafka
//	    listen: 127.0.0.1:9092    # embedded only: serve the Kafka protocol; off unless set
//	  defaults:                  # for this pipeline's topics
//	    partitions: 3            # default 1
//	    config: {retention.ms: 604800000}
//	topics:                      # topics to create if they do not exist
//	  - name: web.tracking       # required
//	    partitions: 3            # default: log.defaults.partitions
//	    config: {cleanup.policy: compact, segment.bytes: 64MiB}
//	sources:
//	  - name: web-events         # required; unique among all pipelines' sources and sinks
//	    connector: generator     # required; a source connector
//	    topic: web.tracking      # required; may be a template: cdc.{schema}.{table}
//	    tasks: 1                 # the most tasks; default 1
//	    config: {rate: 1000, seed: 42}
//	    transforms:
//	      - {type: filter, condition: "op != 'r'"}
//	sinks:
//	  - name: events-file        # required; unique among all pipelines' sources and sinks
//	    connector: file          # required; a sink connector
//	    topics: [web.tracking]   # required, or topics_regex: 'cdc\..*'
//	    group: events-file       # consumer group, unique among sinks; default: the sink's name
//	    tasks: 1                 # the most tasks; default 1
//	    config: {path: ./data/out/events.jsonl}
//	    transforms: []
//	    errors:
//	      tolerance: all         # none (default): the task fails; all: skip or dead-letter
//	      retries: 5             # default 10; 0 never retries; -1 without limit
//	      backoff: {initial: 100ms, max: 10s}   # the defaults
//	      deadletter: {topic: dlq.events-file}  # only with tolerance: all
//	plugins:
//	  dirs: [./plugins]          # where plugin connectors are found
//	  sha256:                    # optional pins, by file name: 64 hex digits
//	    counter: 505c261e...     # (sha256sum's first field); a mismatch is not started
//
// Top-level keys starting with "x-" are ignored; they hold anchors (&name)
// for reuse with aliases (*name) and merge keys (<<: *name).
//
// # Values
//
// Connector and transform settings are converted to strings, as Kafka
// Connect's configs are: a scalar as written (rate: 1000 gives "1000"), a
// list of scalars joined by commas (tables: [a, b] gives "a,b"; an item
// holding a comma is an error). Nested mappings are an error: write the key
// in full (a.b: 1). Each setting is checked against the connector's or
// transform's spec; the loader does not fill in spec defaults.
//
// Topic configs use Kafka's names and meanings, listed by [TopicSpec]. Byte
// sizes may carry a unit (64MiB, 10GB) and are handed on as plain byte
// counts. Pipeline-level durations (errors.backoff) are Go durations: 500ms,
// 10s, 1m30s.
//
// A transform is a mapping whose key "type" names the transform and whose
// other keys are its settings, so a transform cannot have a setting called
// "type".
//
// # Environment variables
//
// In every value (never in keys), ${NAME} is replaced by the environment
// variable NAME, and ${NAME:-default} by NAME or, when NAME is unset or
// empty, by default, whose braces pair up as in a shell
// (${TOPIC:-cdc.{schema}.{table}}). An unset variable without a default is
// an error at its position. $${ stands for a literal ${; any other $ is
// kept. In flow collections ({...}, [...]) a value holding ${...} must be
// quoted, since braces are YAML syntax there.
//
// # Secrets
//
// A setting is secret when its spec parameter is secret (connect.Param.Secret
// or type password) or when any part of its value came from the
// environment. Source.Secrets, Sink.Secrets and Transform.Secrets name these
// settings, and [Pipeline.Masked] returns a copy with their values replaced
// by connect.Masked: show only that copy in logs, status and REST answers.
// Error messages never show a secret value.
//
// # Topics that exist
//
// A sink may read a topic that is listed under topics:, or that a source
// writes, or that a transform of a source routes to (a transform setting
// named "topic"), or that a dead-letter queue receives. When a source writes
// to a template ("{" in the topic) or a route transform's topic is one, the
// set of topics is open and the check is skipped. With [LoadDir] the check
// spans all files of the directory.
//
// # Plugins
//
// Plugin connectors are known only after plugins.dirs has been read. A
// caller that supports plugins loads the file with a nil Catalog (which
// checks everything but connector and transform names and settings), loads
// the plugins from Pipeline.Plugins.Dirs, pinned to Pipeline.Plugins.SHA256,
// and loads the file again with a catalog that includes them. The loader
// checks the pins' form (a file name, 64 hex digits; one sum per file
// across the files loaded together), not the files: that is the plugin
// host's job, before it starts one.
package pipelines
