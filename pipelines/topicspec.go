package pipelines

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// TopicSpec returns the topic configs a pipeline file accepts under
// topics[].config and log.defaults.config: exactly those the log accepts
// (log.ConfigNames), with the log's defaults and descriptions, so that a
// file that validates creates its topics. They carry Kafka's names and
// meanings. Byte sizes (the *.bytes configs) may be written with units
// (64MiB) and are handed on in bytes; -1 means "no limit" where Kafka
// allows it. Values are checked by the log's own rules (log.ValidateConfig).
func TopicSpec() connect.Spec {
	var spec connect.Spec
	for _, name := range tlog.ConfigNames() {
		def, _ := tlog.ConfigDefault(name)
		spec.Params = append(spec.Params, connect.Param{Name: name, Type: topicConfigType(name), Default: def, Description: tlog.ConfigDoc(name)})
	}
	return spec
}

// topicConfigType is how a pipeline file writes a topic config: sizes with
// units, a policy as a list; the log checks the value itself.
func topicConfigType(name string) connect.ParamType {
	switch {
	case strings.HasSuffix(name, ".bytes"):
		return connect.TypeSize
	case name == tlog.ConfigCleanupPolicy:
		return connect.TypeList
	}
	return connect.TypeString
}

// topicConfig validates topic configs and returns them with byte sizes
// converted to plain byte counts.
func (d *decoder) topicConfig(s settings, path string, missingAt *yaml.Node) map[string]string {
	spec := TopicSpec()
	unlimited := func(name, value string) bool { return name == tlog.ConfigRetentionBytes && value == "-1" }
	d.check(spec, s, path, "topics", missingAt, unlimited)
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		p, ok := spec.Param(k)
		if !ok {
			continue
		}
		if p.Type == connect.TypeSize && !unlimited(k, v) {
			n, err := connect.ParseSize(v)
			if err != nil {
				continue
			}
			v = strconv.FormatInt(n, 10)
		}
		if err := tlog.ValidateConfig(map[string]string{k: v}); err != nil {
			if st := s.byKey[k]; st != nil && !st.bad {
				msg := strings.TrimPrefix(err.Error(), tlog.ErrInvalidConfig.Error()+": "+k+"="+v+": ")
				d.errorf(st.value, join(path, k), p.Description, "%q is not a valid %s: %s", s.values[k], k, msg)
			}
			continue
		}
		out[k] = v
	}
	return out
}
