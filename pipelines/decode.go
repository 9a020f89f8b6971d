package pipelines

import (
	"fmt"
	"net"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tributary-io/tributary/connect"
)

// The keys of each mapping, in the order the docs list them.
var (
	topKeys        = []string{"version", "name", "log", "topics", "sources", "sinks", "plugins"}
	logKeys        = []string{"backend", "dir", "kafka", "defaults"}
	kafkaKeys      = []string{"brokers", "listen", "auto_create_topics", "session_timeout", "tls", "sasl"}
	kafkaTLSKeys   = []string{"ca", "cert", "key", "server.name"}
	kafkaSASLKeys  = []string{"mechanism", "username", "password", "mechanisms", "users"}
	defaultsKeys   = []string{"partitions", "config"}
	topicKeys      = []string{"name", "partitions", "config"}
	sourceKeys     = []string{"name", "connector", "topic", "tasks", "config", "transforms", "linger"}
	sinkKeys       = []string{"name", "connector", "topics", "topics_regex", "group", "tasks", "config", "transforms", "errors"}
	errorsKeys     = []string{"tolerance", "retries", "backoff", "deadletter"}
	backoffKeys    = []string{"initial", "max"}
	deadletterKeys = []string{"topic"}
	pluginsKeys    = []string{"dirs", "sha256", "call_timeout"}
)

var (
	backends   = []string{string(BackendEmbedded), string(BackendKafka)}
	tolerances = []string{string(ToleranceNone), string(ToleranceAll)}
)

// ref is a name written at a place in a file.
type ref struct {
	name string
	pos  Pos
	path string
	// defaulted marks a sink's group that is its name, not written.
	defaulted bool
	// owner names the source or sink the name belongs to (for a name that
	// is a connector's own, owner is that name); empty for other names.
	owner string
}

// file is one decoded pipeline file with the places of the names that are
// checked across entries and across files.
type file struct {
	p        *Pipeline
	name     ref
	log      Pos   // where log: is; the file itself when it is left out
	topics   []ref // names under topics:
	conns    []ref // names of sources and sinks
	groups   []ref // consumer groups of sinks
	produced []ref // topics that sources, their transforms and dead-letter queues write
	anyTopic bool  // a source writes to a topic template, which can be any topic
	reads    []ref // topics that sinks read
	pins     []pinRef
	// callTimeout is plugins.call_timeout, its name the duration written.
	callTimeout *ref
	claims      []claimRef // what a connector holds alone (connect.Param.Exclusive)
}

// claimRef is a Claim written at a place in a file.
type claimRef struct {
	Claim
	ref
}

// pinRef is a plugin file pinned to a sha256 under plugins.sha256.
type pinRef struct {
	ref
	sum string
}

// fileDecoder decodes the pipeline schema of one file.
type fileDecoder struct {
	decoder
	catalog Catalog
	f       *file
}

// pipeline decodes the root node of a pipeline file.
func (d *fileDecoder) pipeline(root *yaml.Node, defaultName string) {
	p := &Pipeline{File: d.file}
	d.f = &file{p: p, log: Pos{File: d.file}}
	if root.Kind != yaml.MappingNode {
		d.errorf(root, "", "a pipeline file is a mapping that starts with version: 1", "expected a mapping (key: value) at the top level, got %s", describe(root))
		return
	}
	top := d.fields(root, "", "a pipeline", topKeys, true)
	if !d.version(root, top) {
		return
	}

	p.Name = defaultName
	d.f.name = ref{name: defaultName, pos: Pos{File: d.file}, path: "name"}
	if e, ok := top["name"]; ok {
		if name, ok := d.name(e.value, "name", "pipeline name"); ok {
			p.Name = name
			d.f.name = ref{name: name, pos: d.pos(e.value), path: "name"}
		}
	} else if !validName(defaultName) {
		d.errorf(root, "name", "add name: <pipeline name>", "missing required key \"name\" (the file name %q is not a valid pipeline name)", defaultName)
		p.Name, d.f.name.name = "", ""
	}

	if e, ok := top["log"]; ok {
		d.f.log = d.pos(e.key)
	}
	d.log(top["log"].value, &p.Log)
	d.topics(top["topics"].value, p)
	d.sources(top["sources"].value, p)
	d.sinks(top["sinks"].value, p)
	if e, ok := top["plugins"]; ok {
		d.plugins(e.value, &p.Plugins)
	}
}

func (d *fileDecoder) plugins(n *yaml.Node, p *Plugins) {
	f := d.fields(n, "plugins", "plugins", pluginsKeys, false)
	if e, ok := f["dirs"]; ok {
		dirs, nodes, _ := d.stringList(e.value, "plugins.dirs", "a list of directories")
		for i, dir := range dirs {
			if dir == "" {
				d.errorf(nodes[i], index("plugins.dirs", i), "", "a plugin directory must not be empty")
			}
		}
		p.Dirs = dirs
	}
	if e, ok := f["sha256"]; ok {
		p.SHA256 = d.pluginPins(e.value)
	}
	if e, ok := f["call_timeout"]; ok {
		if v, ok := d.duration(e.value, "plugins.call_timeout"); ok {
			if v < time.Second {
				d.errorf(e.value, "plugins.call_timeout", "e.g. 30s (the default) or 2m", "plugins.call_timeout %s is under a second", v)
			} else {
				p.CallTimeout = v
				d.f.callTimeout = &ref{name: v.String(), pos: d.pos(e.value), path: "plugins.call_timeout"}
			}
		}
	}
}

// pluginPins reads plugins.sha256: plugin file name → sha256 in hex.
func (d *fileDecoder) pluginPins(n *yaml.Node) map[string]string {
	const path = "plugins.sha256"
	const hint = "e.g. sha256: {counter: <the first field of `sha256sum counter`>}"
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, hint, "plugins.sha256 must be a mapping of plugin file names to sha256 sums, got %s", describe(n))
		return nil
	}
	pins := make(map[string]string)
	for _, e := range d.pairs(n, path) {
		name, kpath := e.key.Value, join(path, e.key.Value)
		switch {
		case name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`):
			d.errorf(e.key, kpath, "name the file as it is in its plugin directory, e.g. counter", "%q is not a plugin file name", name)
			continue
		case strings.HasPrefix(name, "."):
			d.errorf(e.key, kpath, "rename the file: hidden files are not plugins", "%q is a hidden file, which plugin discovery skips", name)
			continue
		case name == "plugins.lock":
			d.errorf(e.key, kpath, "", "plugins.lock is the lock file of a plugin directory, not a plugin")
			continue
		}
		s, ok := d.scalar(e.value, kpath, "a sha256 (64 hex digits)")
		if !ok {
			continue
		}
		sum := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s.value), "sha256:"))
		if !isSHA256(sum) {
			d.errorf(e.value, kpath, "the first field of `sha256sum "+name+"`", "expected a sha256 (64 hex digits), got %s", describeValue(s))
			continue
		}
		pins[name] = sum
		d.f.pins = append(d.f.pins, pinRef{ref: ref{name: name, pos: d.pos(e.value), path: kpath}, sum: sum})
	}
	return pins
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// version checks the version key; false means the rest of the file is in a
// format this loader does not know.
func (d *fileDecoder) version(root *yaml.Node, top map[string]entry) bool {
	e, ok := top["version"]
	if !ok {
		d.errorf(root, "version", "add version: 1 as the first line", "missing required key \"version\"")
		return true
	}
	v, ok := d.integer(e.value, "version", 1)
	if ok && v != 1 {
		d.errorf(e.value, "version", "this version of Tributary reads version 1", "unsupported version %d", v)
		return false
	}
	return true
}

// required returns the value of key in f, reporting it when it is missing
// (at owner) or empty.
func (d *fileDecoder) required(f map[string]entry, key string, owner *yaml.Node, path, what string) (string, *yaml.Node, bool) {
	e, ok := f[key]
	if !ok {
		if f != nil {
			d.errorf(owner, path, "", "missing required key %q in %s", key, what)
		}
		return "", nil, false
	}
	v, ok := d.str(e.value, join(path, key))
	if !ok {
		return "", e.value, false
	}
	if v == "" {
		d.errorf(e.value, join(path, key), "", "%s must not be empty", key)
		return "", e.value, false
	}
	return v, e.value, true
}

// name reads a pipeline, source or sink name.
func (d *fileDecoder) name(n *yaml.Node, path, what string) (string, bool) {
	v, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if p := checkName(path, what, v); p != nil {
		d.problem(n, path, p)
		return "", false
	}
	return v, true
}

func validName(s string) bool {
	if s == "" || len(s) > 249 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// problem reports p at n, under path (a file's path of the value, not
// p.Key).
func (d *fileDecoder) problem(n *yaml.Node, path string, p *Problem) {
	d.errorf(n, path, p.Hint, "%s", p.Message)
}

// isTemplate reports whether topic is a template the connector fills in.
func isTemplate(topic string) bool { return strings.Contains(topic, "{") }

// topicName checks a topic name as Kafka does.
func (d *fileDecoder) topicName(v string, n *yaml.Node, path string) bool {
	if p := checkTopicName(path, v); p != nil {
		d.problem(n, path, p)
		return false
	}
	return true
}

// sourceTopic checks a source's topic, a template of connector's
// placeholders or a name (checkSourceTopic), and reports a problem in it
// where it is in the value.
func (d *fileDecoder) sourceTopic(connector, v string, n *yaml.Node, path string) bool {
	p, off := checkSourceTopic(path, connector, v)
	if p == nil {
		return true
	}
	pos := d.pos(n)
	if off >= 0 {
		pos = d.valuePos(n, v, off)
	}
	d.errorAt(pos, path, p.Hint, "%s", p.Message)
	return false
}

func (d *fileDecoder) log(n *yaml.Node, l *Log) {
	l.Backend, l.Dir, l.Defaults.Partitions = BackendEmbedded, "./data", 1
	f := d.fields(n, "log", "log", logKeys, false)
	var backendNode *yaml.Node
	if e, ok := f["backend"]; ok {
		backendNode = e.value
		if v, ok := d.str(e.value, "log.backend"); ok {
			if contains(backends, v) {
				l.Backend = Backend(v)
			} else {
				d.errorf(e.value, "log.backend", choicesHint(v, "backends", backends), "unknown log backend %q", v)
			}
		}
	}
	if e, ok := f["dir"]; ok {
		if v, ok := d.str(e.value, "log.dir"); ok {
			if v == "" {
				d.errorf(e.value, "log.dir", "leave the key out for ./data", "log.dir must not be empty")
			} else {
				l.Dir = v
			}
		}
	}
	hasBrokers := false
	if e, ok := f["kafka"]; ok {
		k := d.fields(e.value, "log.kafka", "log.kafka", kafkaKeys, false)
		if e, ok := k["brokers"]; ok {
			hasBrokers = true
			brokers, nodes, _ := d.stringList(e.value, "log.kafka.brokers", "a list of host:port addresses")
			for i, b := range brokers {
				if _, _, err := net.SplitHostPort(b); err != nil {
					d.errorf(nodes[i], index("log.kafka.brokers", i), "e.g. localhost:9092", "broker %q is not a host:port address", b)
				}
			}
			l.Kafka.Brokers = brokers
		}
		if e, ok := k["listen"]; ok {
			if v, ok := d.str(e.value, "log.kafka.listen"); ok {
				if _, _, err := net.SplitHostPort(v); err != nil {
					d.errorf(e.value, "log.kafka.listen", "e.g. 127.0.0.1:9092", "listen address %q is not host:port", v)
				} else if l.Backend == BackendKafka {
					d.errorf(e.value, "log.kafka.listen", "leave it out, or use backend: embedded", "the Kafka listener serves the embedded log; with backend kafka the cluster is the listener")
				} else {
					l.Kafka.Listen = v
				}
			}
		}
		if e, ok := k["auto_create_topics"]; ok {
			if v, ok := d.boolean(e.value, "log.kafka.auto_create_topics"); ok {
				l.Kafka.NoAutoCreateTopics = !v
			}
		}
		if e, ok := k["session_timeout"]; ok {
			if v, ok := d.duration(e.value, "log.kafka.session_timeout"); ok {
				switch {
				case l.Backend != BackendKafka:
					d.errorf(e.key, "log.kafka.session_timeout", "leave it out, or use backend: kafka", "log.kafka.session_timeout applies to the kafka backend's consumer groups and source leases")
				case v < 6*time.Second || v > 30*time.Minute:
					d.errorf(e.value, "log.kafka.session_timeout", "e.g. 10s; brokers accept 6s to 30m by default (group.min/max.session.timeout.ms)", "session timeout %s is out of range", v)
				default:
					l.Kafka.SessionTimeout = v
				}
			}
		}
		if e, ok := k["tls"]; ok {
			l.Kafka.TLS = d.kafkaTLS(e, l)
		}
		if e, ok := k["sasl"]; ok {
			l.Kafka.SASL = d.kafkaSASL(e, l)
		}
		if e, ok := k["auto_create_topics"]; ok && l.Kafka.Listen == "" {
			d.errorf(e.key, "log.kafka.auto_create_topics", "set log.kafka.listen to serve the Kafka protocol (with backend kafka, the cluster's auto.create.topics.enable decides)", "log.kafka.auto_create_topics applies to the Kafka listener, which is off")
		}
		for _, key := range []string{"tls", "sasl"} {
			if e, ok := k[key]; ok && l.Backend != BackendKafka && l.Kafka.Listen == "" {
				d.errorf(e.key, join("log.kafka", key), "set log.kafka.listen to serve the Kafka protocol, or backend: kafka to connect to a cluster", "log.kafka.%s applies to the Kafka listener or the kafka backend, and neither is on", key)
			}
		}
	}
	if l.Backend == BackendKafka && !hasBrokers {
		d.errorf(backendNode, "log.backend", "e.g. kafka: {brokers: [localhost:9092]}", "backend kafka needs log.kafka.brokers")
	}
	if e, ok := f["defaults"]; ok {
		df := d.fields(e.value, "log.defaults", "log.defaults", defaultsKeys, false)
		if e, ok := df["partitions"]; ok {
			if v, ok := d.integer(e.value, "log.defaults.partitions", 1); ok {
				l.Defaults.Partitions = v
			}
		}
		if e, ok := df["config"]; ok {
			s := d.settings(d.configEntries(e.value, "log.defaults.config"), "log.defaults.config")
			l.Defaults.Config = d.topicConfig(s, "log.defaults.config", e.key)
		}
	}
}

// list returns the items of the list n (aliases resolved); null gives none.
func (d *fileDecoder) list(n *yaml.Node, path string) []*yaml.Node {
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "write each entry on a line starting with '- '", "%s must be a list, got %s", path, describe(n))
		return nil
	}
	items := make([]*yaml.Node, 0, len(n.Content))
	for _, item := range n.Content {
		if item = resolve(item); item != nil {
			items = append(items, item)
		}
	}
	return items
}

func (d *fileDecoder) topics(n *yaml.Node, p *Pipeline) {
	for i, item := range d.list(n, "topics") {
		path := index("topics", i)
		f := d.fields(item, path, "a topic", topicKeys, false)
		if f == nil {
			continue
		}
		t := Topic{Partitions: p.Log.Defaults.Partitions, Pos: d.pos(item)}
		if name, node, ok := d.required(f, "name", item, path, "a topic"); ok && d.topicName(name, node, join(path, "name")) {
			t.Name = name
			d.f.topics = append(d.f.topics, ref{name: name, pos: d.pos(node), path: join(path, "name")})
		}
		if e, ok := f["partitions"]; ok {
			if v, ok := d.integer(e.value, join(path, "partitions"), 1); ok {
				t.Partitions = v
			}
		}
		t.Config = make(map[string]string)
		for k, v := range p.Log.Defaults.Config {
			t.Config[k] = v
		}
		if e, ok := f["config"]; ok {
			s := d.settings(d.configEntries(e.value, join(path, "config")), join(path, "config"))
			for k, v := range d.topicConfig(s, join(path, "config"), e.key) {
				t.Config[k] = v
			}
		}
		p.Topics = append(p.Topics, t)
	}
}

// connector reads the connector key of a source or sink and returns its
// spec when the catalog knows it; nil without a catalog.
func (d *fileDecoder) connector(f map[string]entry, owner *yaml.Node, path string, kind Kind) (string, *connect.Spec) {
	name, node, ok := d.required(f, "connector", owner, path, "a "+string(kind))
	if !ok || d.catalog == nil {
		return name, nil
	}
	if spec, ok := d.catalog.Spec(kind, name); ok {
		return name, &spec
	}
	msg := fmt.Sprintf("unknown %s connector %q", kind, name)
	for _, other := range []Kind{KindSource, KindSink} {
		if _, ok := d.catalog.Spec(other, name); ok && other != kind {
			msg = fmt.Sprintf("%q is a %s connector, not a %s connector", name, other, kind)
		}
	}
	d.errorf(node, join(path, "connector"), choicesHint(name, string(kind)+" connectors", d.catalog.Names(kind)), "%s", msg)
	return name, nil
}

// connectorConfig reads and checks the config of a connector instance.
func (d *fileDecoder) connectorConfig(f map[string]entry, spec *connect.Spec, owner *yaml.Node, path, what string) (map[string]string, []string) {
	var (
		entries   []entry
		missingAt = owner
	)
	if e, ok := f["config"]; ok {
		entries = d.configEntries(e.value, join(path, "config"))
		missingAt = e.key
	} else if e, ok := f["connector"]; ok {
		missingAt = e.value
	}
	s := d.settings(entries, join(path, "config"))
	if spec != nil {
		d.check(*spec, s, join(path, "config"), what, missingAt, nil)
	}
	return s.values, s.secrets(spec)
}

// transforms reads a transform chain. Each entry is a mapping: "type" names
// the transform, every other key is one of its settings.
func (d *fileDecoder) transforms(f map[string]entry, path string) []Transform {
	e, ok := f["transforms"]
	if !ok {
		return nil
	}
	path = join(path, "transforms")
	var out []Transform
	for i, item := range d.list(e.value, path) {
		ipath := index(path, i)
		if item.Kind != yaml.MappingNode {
			d.errorf(item, ipath, "write {type: <transform>, <setting>: <value>, ...}", "a transform must be a mapping (key: value), got %s", describe(item))
			continue
		}
		var (
			typ     string
			typNode *yaml.Node
			rest    []entry
		)
		for _, e := range d.pairs(item, ipath) {
			if e.key.Value == "type" {
				typNode = e.value
				typ, _ = d.str(e.value, join(ipath, "type"))
				continue
			}
			rest = append(rest, e)
		}
		t := Transform{Pos: d.pos(item)}
		var spec *connect.Spec
		switch {
		case typNode == nil:
			d.errorf(item, ipath, "write {type: <transform>, <setting>: <value>, ...}", "missing required key \"type\" in a transform")
		case typ == "":
			d.errorf(typNode, join(ipath, "type"), "", "type must not be empty")
		case d.catalog != nil:
			if s, ok := d.catalog.Spec(KindTransform, typ); ok {
				spec = &s
			} else {
				d.errorf(typNode, join(ipath, "type"), choicesHint(typ, "transforms", d.catalog.Names(KindTransform)), "unknown transform %q", typ)
			}
		}
		t.Type = typ
		before := len(d.errs)
		s := d.settings(rest, ipath)
		if spec != nil {
			d.check(*spec, s, ipath, fmt.Sprintf("transform %q", typ), typNode, nil)
			if b, ok := d.catalog.(TransformBuilder); ok && len(d.errs) == before {
				d.build(b, *spec, s, typ, typNode, ipath)
			}
		}
		t.Config, t.Secrets = s.values, s.secrets(spec)
		out = append(out, t)
		if topic, ok := t.Config["topic"]; ok && topic != "" {
			if isTemplate(topic) {
				d.f.anyTopic = true
			}
			d.f.produced = append(d.f.produced, ref{name: topic, pos: d.pos(s.byKey["topic"].value), path: join(ipath, "topic")})
		}
	}
	return out
}

// build builds the transform typ, whose settings s passed its spec, with
// the catalog's constructor, and reports each problem it finds at the
// setting the problem names (at the type when it names none). Messages
// never show secret values nor those from the environment.
func (d *fileDecoder) build(b TransformBuilder, spec connect.Spec, s settings, typ string, typNode *yaml.Node, path string) {
	for _, fe := range b.CheckTransform(typ, s.values) {
		at, where, hint, msg := typNode, join(path, "type"), "", d.mask(spec, s, fe.Message)
		if st, ok := s.byKey[fe.Param]; ok {
			p, _ := spec.Param(fe.Param)
			at, where, hint = st.value, join(path, fe.Param), describeParam(p)
			if len(st.vars) > 0 {
				msg += fmt.Sprintf(" (from ${%s})", strings.Join(st.vars, "}, ${"))
			}
		} else if fe.Param != "" {
			msg = fe.Param + ": " + msg
		}
		d.errorf(at, where, hint, "%s", msg)
	}
}

// tasks reads a connector's tasks (Kafka Connect's tasks.max). A worker
// runs one task per connector, so more is an error here, with its place in
// the file, rather than when run starts the pipeline.
func (d *fileDecoder) tasks(f map[string]entry, path string) int {
	if e, ok := f["tasks"]; ok {
		if v, ok := d.integer(e.value, join(path, "tasks"), 1); ok {
			if v > 1 {
				d.errorf(e.value, join(path, "tasks"), "set tasks: 1; to share a sink's partitions, run several workers on the kafka backend",
					"%d tasks asked for; a worker runs one task per connector", v)
			}
			return v
		}
	}
	return 1
}

// linger reads a source's linger: a duration of at least 0 (0: no
// lingering, as when it is left out).
func (d *fileDecoder) linger(n *yaml.Node, path string) time.Duration {
	const expected = "a duration such as 5ms (0 appends at once)"
	s, ok := d.scalar(n, path, expected)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(strings.TrimSpace(s.value))
	switch {
	case err != nil:
		d.errorf(n, path, unitHint(s.value), "expected %s, got %s", expected, describeValue(s))
		return 0
	case v < 0:
		d.errorf(n, path, "a linger cannot be negative", "expected %s, got %s", expected, describeValue(s))
		return 0
	}
	return v
}

func (d *fileDecoder) sources(n *yaml.Node, p *Pipeline) {
	for i, item := range d.list(n, "sources") {
		path := index("sources", i)
		f := d.fields(item, path, "a source", sourceKeys, false)
		if f == nil {
			continue
		}
		s := Source{Pos: d.pos(item)}
		if e, ok := f["name"]; ok {
			if name, ok := d.name(e.value, join(path, "name"), "source name"); ok {
				s.Name = name
				d.f.conns = append(d.f.conns, ref{name: name, pos: d.pos(e.value), path: join(path, "name"), owner: name})
			}
		} else {
			d.errorf(item, path, "", "missing required key \"name\" in a source")
		}
		var spec *connect.Spec
		s.Connector, spec = d.connector(f, item, path, KindSource)
		if topic, node, ok := d.required(f, "topic", item, path, "a source"); ok && d.sourceTopic(s.Connector, topic, node, join(path, "topic")) {
			s.Topic = topic
			if isTemplate(topic) {
				d.f.anyTopic = true
			}
			d.f.produced = append(d.f.produced, ref{name: topic, pos: d.pos(node), path: join(path, "topic")})
		}
		s.Tasks = d.tasks(f, path)
		s.Config, s.Secrets = d.connectorConfig(f, spec, item, path, fmt.Sprintf("source connector %q", s.Connector))
		d.claims(exclusiveClaims(s.Name, s.Connector, s.Config, spec), f, item, path)
		s.Transforms = d.transforms(f, path)
		if e, ok := f["linger"]; ok {
			s.Linger = d.linger(e.value, join(path, "linger"))
		}
		p.Sources = append(p.Sources, s)
	}
}

func (d *fileDecoder) sinks(n *yaml.Node, p *Pipeline) {
	for i, item := range d.list(n, "sinks") {
		path := index("sinks", i)
		f := d.fields(item, path, "a sink", sinkKeys, false)
		if f == nil {
			continue
		}
		s := Sink{Pos: d.pos(item)}
		nameNode := item
		if e, ok := f["name"]; ok {
			if name, ok := d.name(e.value, join(path, "name"), "sink name"); ok {
				s.Name, nameNode = name, e.value
				d.f.conns = append(d.f.conns, ref{name: name, pos: d.pos(e.value), path: join(path, "name"), owner: name})
			}
		} else {
			d.errorf(item, path, "", "missing required key \"name\" in a sink")
		}
		var spec *connect.Spec
		s.Connector, spec = d.connector(f, item, path, KindSink)
		d.sinkTopics(f, item, path, &s)

		s.Group = s.Name
		group := ref{name: s.Name, pos: d.pos(nameNode), path: join(path, "name"), defaulted: true, owner: s.Name}
		groupNode := nameNode
		if e, ok := f["group"]; ok {
			if g, ok := d.str(e.value, join(path, "group")); ok && g != "" {
				s.Group = g
				group = ref{name: g, pos: d.pos(e.value), path: join(path, "group"), owner: s.Name}
				groupNode = e.value
			}
		}
		if s.Group != "" {
			if p := checkGroup(s.Group); p != nil {
				d.problem(groupNode, group.path, p)
			}
			d.f.groups = append(d.f.groups, group)
		}

		s.Tasks = d.tasks(f, path)
		s.Config, s.Secrets = d.connectorConfig(f, spec, item, path, fmt.Sprintf("sink connector %q", s.Connector))
		d.claims(exclusiveClaims(s.Name, s.Connector, s.Config, spec), f, item, path)
		s.Transforms = d.transforms(f, path)
		s.Errors = d.errorPolicy(f["errors"], path, &s)
		p.Sinks = append(p.Sinks, s)
	}
}

// claims records where a connector's claims are written: at their
// setting under config.
func (d *fileDecoder) claims(cs []Claim, f map[string]entry, item *yaml.Node, path string) {
	for _, c := range cs {
		at, cpath := item, join(path, c.Key)
		if e, ok := f["config"]; ok && e.value != nil && e.value.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(e.value.Content); i += 2 {
				if "config."+e.value.Content[i].Value == c.Key {
					at = e.value.Content[i+1]
				}
			}
		}
		d.f.claims = append(d.f.claims, claimRef{Claim: c, ref: ref{name: c.Value, pos: d.pos(at), path: cpath}})
	}
}

func (d *fileDecoder) sinkTopics(f map[string]entry, item *yaml.Node, path string, s *Sink) {
	topicsEntry, hasTopics := f["topics"]
	regexEntry, hasRegex := f["topics_regex"]
	if p := checkTopicsChoice(hasTopics, hasRegex); p != nil {
		if hasRegex {
			d.problem(regexEntry.key, join(path, "topics_regex"), p)
		} else {
			d.problem(item, path, p)
		}
	}
	if hasTopics {
		topics, nodes, _ := d.stringList(topicsEntry.value, join(path, "topics"), "a list of topic names")
		seen := make(map[string]bool)
		for i, t := range topics {
			tpath := index(join(path, "topics"), i)
			if !d.topicName(t, nodes[i], tpath) {
				continue
			}
			if seen[t] {
				d.errorf(nodes[i], tpath, "", "topic %q is listed twice", t)
				continue
			}
			seen[t] = true
			s.Topics = append(s.Topics, t)
			d.f.reads = append(d.f.reads, ref{name: t, pos: d.pos(nodes[i]), path: tpath})
		}
		if v := topicsEntry.value; isNull(v) || (v.Kind == yaml.SequenceNode && len(v.Content) == 0) {
			d.errorf(topicsEntry.value, join(path, "topics"), "e.g. topics: [web.tracking]", "topics must name at least one topic")
		}
	}
	if hasRegex {
		if v, ok := d.str(regexEntry.value, join(path, "topics_regex")); ok {
			if p := checkTopicsRegex(v); p != nil {
				d.problem(regexEntry.value, join(path, "topics_regex"), p)
			} else {
				s.TopicsRegex = v
			}
		}
	}
}

func (d *fileDecoder) errorPolicy(e entry, path string, s *Sink) ErrorPolicy {
	ep := ErrorPolicy{
		Tolerance: ToleranceNone,
		Retries:   DefaultRetries,
		Backoff:   Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax},
	}
	if e.value == nil {
		return ep
	}
	path = join(path, "errors")
	f := d.fields(e.value, path, "errors", errorsKeys, false)
	if e, ok := f["tolerance"]; ok {
		if v, ok := d.str(e.value, join(path, "tolerance")); ok {
			if contains(tolerances, v) {
				ep.Tolerance = Tolerance(v)
			} else {
				d.errorf(e.value, join(path, "tolerance"), choicesHint(v, "tolerances", tolerances), "unknown error tolerance %q", v)
			}
		}
	}
	if e, ok := f["retries"]; ok {
		if v, ok := d.integer(e.value, join(path, "retries"), -1); ok {
			ep.Retries = v
		}
	}
	if e, ok := f["backoff"]; ok {
		bpath := join(path, "backoff")
		b := d.fields(e.value, bpath, "errors.backoff", backoffKeys, false)
		if e, ok := b["initial"]; ok {
			if v, ok := d.duration(e.value, join(bpath, "initial")); ok {
				ep.Backoff.Initial = v
			}
		}
		if e, ok := b["max"]; ok {
			if v, ok := d.duration(e.value, join(bpath, "max")); ok {
				ep.Backoff.Max = v
				if ep.Backoff.Max < ep.Backoff.Initial {
					d.errorf(e.value, join(bpath, "max"), "", "backoff max %s is less than initial %s", ep.Backoff.Max, ep.Backoff.Initial)
				}
			}
		}
	}
	if e, ok := f["deadletter"]; ok {
		dpath := join(path, "deadletter")
		dl := d.fields(e.value, dpath, "errors.deadletter", deadletterKeys, false)
		if p := checkDeadLetterTolerance(ep.Tolerance); p != nil {
			d.problem(e.key, dpath, p)
		}
		if topic, node, ok := d.required(dl, "topic", e.value, dpath, "errors.deadletter"); ok {
			if p := checkDeadLetterTopic(topic, s.Topics, s.Name); p != nil {
				d.problem(node, join(dpath, "topic"), p)
			} else {
				ep.DeadLetter.Topic = topic
				d.f.produced = append(d.f.produced, ref{name: topic, pos: d.pos(node), path: join(dpath, "topic")})
			}
		}
	}
	return ep
}

// kafkaTLS decodes log.kafka.tls: the client's settings with backend kafka,
// the listener's with the embedded log.
func (d *fileDecoder) kafkaTLS(e entry, l *Log) *KafkaTLS {
	const path = "log.kafka.tls"
	f := d.fields(e.value, path, path, kafkaTLSKeys, false)
	t := &KafkaTLS{}
	for key, dst := range map[string]*string{"ca": &t.CA, "cert": &t.Cert, "key": &t.Key, "server.name": &t.ServerName} {
		if e, ok := f[key]; ok {
			if v, ok := d.str(e.value, join(path, key)); ok {
				*dst = v
			}
		}
	}
	if (t.Cert == "") != (t.Key == "") {
		d.errorf(e.key, path, "give both cert and key (PEM files), or neither", "log.kafka.tls needs cert and key together")
	}
	if l.Backend != BackendKafka {
		if t.Cert == "" {
			d.errorf(e.key, path, "e.g. tls: {cert: server.pem, key: server.key}", "the Kafka listener's TLS needs cert and key")
		}
		if t.ServerName != "" {
			d.errorf(f["server.name"].key, join(path, "server.name"), "leave it out: it is a client setting, for backend: kafka", "server.name does not apply to the listener")
		}
	}
	return t
}

// kafkaSASL decodes log.kafka.sasl: a mechanism and credentials with
// backend kafka; the users the listener accepts with the embedded log.
func (d *fileDecoder) kafkaSASL(e entry, l *Log) *KafkaSASL {
	const path = "log.kafka.sasl"
	f := d.fields(e.value, path, path, kafkaSASLKeys, false)
	s := &KafkaSASL{}
	str := func(key string) string {
		if e, ok := f[key]; ok {
			if v, ok := d.str(e.value, join(path, key)); ok {
				return v
			}
		}
		return ""
	}
	mechanism := func(v string, n *yaml.Node, p string) bool {
		if !contains(SASLMechanisms, v) {
			d.errorf(n, p, "one of "+strings.Join(SASLMechanisms, ", "), "unknown SASL mechanism %q", v)
			return false
		}
		return true
	}
	if l.Backend == BackendKafka {
		for _, key := range []string{"mechanisms", "users"} {
			if e, ok := f[key]; ok {
				d.errorf(e.key, join(path, key), "use mechanism, username and password: with backend kafka they are the worker's credentials", "%s is a listener setting (backend: embedded with listen)", key)
			}
		}
		s.Mechanism, s.Username, s.Password = str("mechanism"), str("username"), str("password")
		switch {
		case s.Mechanism == "":
			d.errorf(e.key, join(path, "mechanism"), "one of "+strings.Join(SASLMechanisms, ", "), "log.kafka.sasl needs a mechanism")
		case !mechanism(s.Mechanism, f["mechanism"].value, join(path, "mechanism")):
		case s.Username == "" || s.Password == "":
			d.errorf(e.key, path, "e.g. sasl: {mechanism: SCRAM-SHA-512, username: tributary, password: ${KAFKA_PASSWORD}}", "log.kafka.sasl needs username and password")
		}
		return s
	}
	for _, key := range []string{"mechanism", "username", "password"} {
		if e, ok := f[key]; ok {
			d.errorf(e.key, join(path, key), "the listener takes users: {name: password} and mechanisms: [...]", "%s is a client setting (backend: kafka)", key)
		}
	}
	if e, ok := f["mechanisms"]; ok {
		list, nodes, _ := d.stringList(e.value, join(path, "mechanisms"), "a list of SASL mechanisms")
		for i, m := range list {
			if mechanism(m, nodes[i], index(join(path, "mechanisms"), i)) {
				s.Mechanisms = append(s.Mechanisms, m)
			}
		}
	} else {
		s.Mechanisms = SASLMechanisms
	}
	u, ok := f["users"]
	if !ok || u.value == nil || isNull(u.value) {
		d.errorf(e.key, join(path, "users"), "e.g. users: {alice: ${ALICE_PASSWORD}}", "the listener's SASL needs users")
		return s
	}
	if u.value.Kind != yaml.MappingNode {
		d.errorf(u.value, join(path, "users"), "e.g. users: {alice: ${ALICE_PASSWORD}}", "log.kafka.sasl.users must be a mapping of user name to password, got %s", describe(u.value))
		return s
	}
	s.Users = make(map[string]string)
	for _, pe := range d.pairs(u.value, join(path, "users")) {
		p := join(join(path, "users"), pe.key.Value)
		if v, ok := d.str(pe.value, p); ok {
			if v == "" {
				d.errorf(pe.value, p, "set a password, e.g. from ${VAR}", "user %q has an empty password", pe.key.Value)
				continue
			}
			s.Users[pe.key.Value] = v
		}
	}
	return s
}
