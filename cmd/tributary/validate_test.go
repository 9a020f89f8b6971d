package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connectors/httptrack"
)

// What a connector's Open or a transform's constructor refuses is reported
// by validate, every problem of the file at once with its position, and run
// refuses the file before it starts anything (instead of a task that fails
// at every restart).
func TestValidate_ReportsWhatOpenAndConstructorsRefuse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	src := `version: 1
name: bad
sources:
  - name: web
    connector: httptrack
    topic: web.tracking
    config: {listen: 127.0.0.1, write.keys: [k]}
    transforms:
      - {type: filter, action: keep, field: event, matches: "pur(chase"}
      - {type: route, topic: "web.{event}"}
sinks:
  - name: lake
    connector: iceberg
    topics: [web.tracking]
    config: {commit.interval: -5s}
  - name: crm
    connector: webhook
    topics: [web.tracking]
    config:
      url: "https://crm.example.com/{{ .Value.id }"
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		file + `:9:61: sources[0].transforms[0].matches: "pur(chase" is not a valid regular expression`,
		file + `:10:30: sources[0].transforms[1].topic: unknown placeholder {event}`,
		file + `:15:31: sinks[0].config.commit.interval: "-5s" must be positive (more than 0); commit.interval: Commit a snapshot`,
		file + `:20:12: sinks[1].config.url: template: url:1: unexpected "}" in operand; url: URL to send to`,
	}
	// The httptrack source declares listen's format in its spec (see the
	// report of branch h/validate); until it does, Open alone finds it.
	if p, _ := httptrack.Connector().Spec.Param("listen"); p.Format != "" {
		want = append(want, file+`:7:22: sources[0].config.listen: "127.0.0.1" is not a host:port address (missing port in address)`)
	} else {
		t.Log("httptrack's listen declares no format yet: not checking that error")
	}
	err := mustFail(t, dir, "", "validate", file)
	wantContains(t, "validate", err.Error(), want...)

	start := time.Now()
	err = mustFail(t, filepath.Join(dir, "data"), "", "run", file, "--rest-addr", "127.0.0.1:0")
	wantContains(t, "run", err.Error(), want...)
	if _, statErr := os.Stat(filepath.Join(dir, "data")); statErr == nil {
		t.Error("run created the data dir of a pipeline it refused")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %v to refuse the file", d)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n < len(want) {
		t.Errorf("run reported %d problems, want %d at once", n, len(want))
	}
}

// validate reads the files log.kafka.tls names, as run does: a missing
// certificate or a CA without a PEM certificate is found before a worker
// starts, and run refuses it before it makes the data directory.
func TestValidate_ChecksKafkaTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	data := filepath.Join(dir, "data")
	file := func(name, log string) string {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		src := "version: 1\nname: " + name + "\nlog:\n" + log + `sources:
  - {name: gen, connector: generator, topic: t, config: {rate: 1}}
sinks:
  - {name: out, connector: stdout, topics: [t]}
`
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	listener := func(tls string) string {
		return "  dir: " + data + "\n  kafka: {listen: 127.0.0.1:0, tls: " + tls + "}\n"
	}
	backend := func(tls string) string {
		return "  backend: kafka\n  kafka: {brokers: [127.0.0.1:1], tls: " + tls + "}\n"
	}

	good := file("good", listener("{cert: "+cert+", key: "+key+", ca: "+ca+"}"))
	if out, _, err := tributary(t, dir, "", "validate", good); err != nil {
		t.Fatalf("validate of a listener with readable TLS files: %v\n%s", err, out)
	}
	goodClient := file("goodclient", backend("{ca: "+ca+", cert: "+cert+", key: "+key+"}"))
	if out, _, err := tributary(t, dir, "", "validate", goodClient); err != nil {
		t.Fatalf("validate of a kafka backend with readable TLS files: %v\n%s", err, out)
	}

	noCert := file("nocert", listener("{cert: "+missing+", key: "+key+"}"))
	err := mustFail(t, dir, "", "validate", noCert)
	wantContains(t, "validate", err.Error(), noCert+": pipeline nocert: log.kafka.tls: load the listener's certificate "+missing, "no such file")
	err = mustFail(t, dir, "", "run", noCert, "--rest-addr", "127.0.0.1:0")
	wantContains(t, "run", err.Error(), "log.kafka.tls", missing)
	if _, statErr := os.Stat(data); statErr == nil {
		t.Error("run made the data directory of a listener whose certificate is missing")
	}

	badCA := file("badca", backend("{ca: "+notPEM+"}"))
	err = mustFail(t, dir, "", "validate", badCA)
	wantContains(t, "validate", err.Error(), badCA+": pipeline badca: log.kafka.tls.ca: "+notPEM+" holds no PEM certificate")
}
