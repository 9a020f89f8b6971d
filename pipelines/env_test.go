package pipelines

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := testEnv(map[string]string{"HOST": "db", "PORT": "5432", "EMPTY": ""})
	tests := []struct {
		in       string
		want     string
		wantVars []string
		wantErrs []string // "offset: message"
	}{
		{"plain", "plain", nil, nil},
		{"${HOST}", "db", []string{"HOST"}, nil},
		{"${HOST}:${PORT}", "db:5432", []string{"HOST", "PORT"}, nil},
		{"pg://${HOST:-localhost}/x", "pg://db/x", []string{"HOST"}, nil},
		{"${NOPE:-localhost}", "localhost", nil, nil},
		{"${NOPE:-}", "", nil, nil},
		{"${EMPTY:-fallback}", "fallback", nil, nil},
		{"${EMPTY}", "", []string{"EMPTY"}, nil},
		{"$${HOST}", "${HOST}", nil, nil},
		{"$$${HOST}", "$${HOST}", nil, nil}, // a literal $, then the escape
		{"cost: $5 $HOST", "cost: $5 $HOST", nil, nil},
		{"${NOPE}", "", nil, []string{"0: environment variable NOPE is not set"}},
		{"a ${NOPE} ${ALSO}", "a  ", nil, []string{"2: environment variable NOPE is not set", "10: environment variable ALSO is not set"}},
		{"x ${HOST", "x ${HOST", nil, []string{"2: unterminated ${"}},
		{"${}", "", nil, []string{"0: malformed variable reference ${}"}},
		{"${1X}", "", nil, []string{"0: malformed variable reference ${1X}"}},
		{"${A:B}", "", nil, []string{"0: malformed variable reference ${A:B}"}},
		{"${A:-${B}}", "", nil, []string{"0: nested variable reference in ${A:-${B}} is not supported"}},
		// A default's braces pair up, as in a shell.
		{"${NOPE:-a.{b}.{c}}", "a.{b}.{c}", nil, nil},
		{"${NOPE:-{x}}.y", "{x}.y", nil, nil},
		{"${HOST:-{x}}", "db", []string{"HOST"}, nil},
		{"${NOPE:-a{b}", "${NOPE:-a{b}", nil, []string{"0: unterminated ${"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, vars, errs := expand(tt.in, env)
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, strconv.Itoa(e.offset)+": "+e.message)
			}
			if got != tt.want || !reflect.DeepEqual(vars, tt.wantVars) || !reflect.DeepEqual(gotErrs, tt.wantErrs) {
				t.Errorf("expand(%q): got %q %q %q, want %q %q %q", tt.in, got, vars, gotErrs, tt.want, tt.wantVars, tt.wantErrs)
			}
		})
	}
}

func TestParse_Env(t *testing.T) {
	opts := Options{Catalog: testCatalog, LookupEnv: testEnv(map[string]string{
		"DIR": "/srv/data", "PARTS": "4", "PG_URL": "postgres://u@db/x", "PG_PW": "hunter2", "RATE": "fast",
	})}
	src := `
version: 1
log: {dir: "${DIR}"}
topics:
  - name: t
    partitions: ${PARTS}
sources:
  - name: pg
    connector: postgres
    topic: t
    config:
      url: ${PG_URL}
      password: ${PG_PW}
      tables: ["${SCHEMA:-public}.orders", 'literal.$${x}']
`
	p, err := Parse("p.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"dir", p.Log.Dir, "/srv/data"},
		{"partitions", p.Topics[0].Partitions, 4},
		{"config", p.Sources[0].Config, map[string]string{"url": "postgres://u@db/x", "password": "hunter2", "tables": "public.orders,literal.${x}"}},
		{"secrets", p.Sources[0].Secrets, []string{"password", "url"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestParse_EnvErrors(t *testing.T) {
	opts := Options{Catalog: testCatalog, LookupEnv: testEnv(map[string]string{"RATE": "fast", "PW_PORT": "not-a-port"})}
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"missing variable, plain", "version: 1\nlog:\n  dir: /x/${DATA_DIR}/y\n", []string{
			`p.yaml:3:11: log.dir: environment variable DATA_DIR is not set; set it, or give a default: ${DATA_DIR:-value}`,
		}},
		{"missing variable, double-quoted", "version: 1\nlog: {dir: \"a ${A} ${B}\"}\n", []string{
			`p.yaml:2:15: log.dir: environment variable A is not set; set it, or give a default: ${A:-value}`,
			`p.yaml:2:20: log.dir: environment variable B is not set; set it, or give a default: ${B:-value}`,
		}},
		{"missing variable, after an escape", "version: 1\nlog: {dir: \"\\t${A}\"}\n", []string{
			`p.yaml:2:12: log.dir: environment variable A is not set; set it, or give a default: ${A:-value}`,
		}},
		{"missing variable in a list", "version: 1\nlog: {backend: kafka, kafka: {brokers: [\"${BROKER}\"]}}\n", []string{
			`p.yaml:2:42: log.kafka.brokers[0]: environment variable BROKER is not set; set it, or give a default: ${BROKER:-value}`,
		}},
		{"missing variable in a block scalar", "version: 1\nlog:\n  dir: |\n    ${NOPE}\n", []string{
			`p.yaml:3:8: log.dir: environment variable NOPE is not set; set it, or give a default: ${NOPE:-value}`,
		}},
		{"unquoted in a flow mapping", "version: 1\nlog: {dir: ${DIR}}\n", []string{
			`p.yaml:2:7: invalid YAML: did not find expected ',' or '}'; inside {...} or [...], quote a value holding ${VAR}: "${VAR}"`,
		}},
		{"unterminated", "version: 1\nname: ${NAME\n", []string{
			`p.yaml:2:7: name: unterminated ${; write ${NAME} or ${NAME:-default}, or $${ for a literal ${`,
		}},
		{"bad value from the environment", "version: 1\nsources: [{name: s, connector: generator, topic: t, config: {rate: '${RATE}'}}]\n", []string{
			`p.yaml:2:68: sources[0].config.rate: "********" is not an integer (from ${RATE}); rate: events per second (int)`,
		}},
		{"bad secret value", "version: 1\nsources: [{name: s, connector: postgres, topic: t, config: {url: x, port: abc}}]\n", []string{
			`p.yaml:2:75: sources[0].config.port: "********" is not an integer; port: a secret number (int)`,
		}},
		{"env value as a wrong integer", "version: 1\ntopics: [{name: t, partitions: '${RATE}'}]\n", []string{
			`p.yaml:2:32: topics[0].partitions: expected an integer ≥ 1, got "fast" (from ${RATE})`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.yaml), opts)
			if err == nil {
				t.Fatal("got no error")
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s\nat:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), annotate(tt.yaml, errorList(t, err)))
			}
		})
	}
}

// A ${VAR:-default} whose default holds braces keeps them, as a shell
// does: with TOPIC unset, "${TOPIC:-cdc.{schema}.{table}}" (the CDC
// sources' topic template as a default) is that template, not
// "cdc.{schema.{table}}" cut at the first "}".
func TestParse_EnvDefaultKeepsPairedBraces(t *testing.T) {
	src := "version: 1\nname: p\nsources:\n  - {name: s, connector: postgres, topic: \"${TOPIC:-cdc.{schema}.{table}}\", config: {url: \"postgres://x\"}}\n"
	p, err := Parse("p.yaml", []byte(src), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Sources[0].Topic, "cdc.{schema}.{table}"; got != want {
		t.Errorf("topic = %q, want %q", got, want)
	}
}

// expand itself: the same reference in any value.
func TestExpand_DefaultKeepsPairedBraces(t *testing.T) {
	got, _, errs := expand("${T:-a.{b}.{c}}", testEnv(nil))
	if len(errs) != 0 || got != "a.{b}.{c}" {
		t.Errorf("expand(${T:-a.{b}.{c}}) = %q, %v; want a.{b}.{c}", got, errs)
	}
}
