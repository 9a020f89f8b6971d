package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidate_PluginPins: the pipeline's plugins.sha256 pins reach the
// plugin host. A matching pin validates; a wrong one makes validate and
// run fail before anything starts, at the line of the connector that
// needs the file, naming both sums; a file in the plugin directory that
// is not a plugin is explained the same way.
func TestValidate_PluginPins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugin binaries")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	buildExamplePlugins(t, bin)
	sum := func(name string) string {
		b, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	counterSum, jsonlSum := sum("counter"), sum("jsonl")
	wrong := strings.Repeat("ab", 32)
	file := filepath.Join(dir, "pipeline.yaml")
	pipeline := func(counterPin string) string {
		pins := "jsonl: " + jsonlSum
		if counterPin != "" {
			pins = "counter: " + counterPin + ", " + pins
		}
		return `version: 1
name: plug
log: {dir: ` + filepath.Join(dir, "data") + `}
plugins:
  dirs: [` + bin + `]
  sha256: {` + pins + `}
sources:
  - {name: numbers, connector: counter, topic: numbers, config: {rate: 500}}
sinks:
  - {name: numbers-file, connector: jsonl, topics: [numbers], config: {path: ` + filepath.Join(dir, "out.jsonl") + `}}
`
	}
	writeFile(t, file, pipeline("sha256:"+counterSum))
	out, _ := mustRun(t, dir, "", "validate", file, "--plugins-dir", bin)
	wantContains(t, "validate with matching pins", out, "pipeline plug is valid")

	writeFile(t, file, pipeline(wrong))
	for _, args := range [][]string{{"validate", file}, {"run", file, "--rest-addr", "127.0.0.1:0"}} {
		cmd := args[0]
		err := mustFail(t, dir, "", append(args, "--plugins-dir", bin)...)
		wantContains(t, cmd+" with a wrong pin", err.Error(),
			file+`:8:32: sources[0].connector: unknown source connector "counter"; the plugin file `+filepath.Join(bin, "counter")+` is not usable`,
			"its sha256 is "+counterSum, "the pipeline's plugins.sha256 pins it to "+wrong, "it was not started")
	}

	// A malformed pin is a loader error with its position.
	writeFile(t, file, pipeline("abc"))
	err := mustFail(t, dir, "", "validate", file, "--plugins-dir", bin)
	wantContains(t, "validate with a malformed pin", err.Error(), file+`:6:21: plugins.sha256.counter: expected a sha256 (64 hex digits), got "abc"`)

	// A file that is not a plugin, where a connector's plugin should be.
	writeFile(t, file, pipeline(""))
	if err := os.WriteFile(filepath.Join(bin, "counter"), []byte("#!/bin/sh\necho 'I am a shell script' >&2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = mustFail(t, dir, "", "validate", file, "--plugins-dir", bin)
	wantContains(t, "validate with a script for a plugin", err.Error(), `unknown source connector "counter"; the plugin file `+filepath.Join(bin, "counter")+` is not usable`,
		"did not complete the plugin handshake", "I am a shell script")

	// plugins list shows it as invalid, with the reason, beside the good
	// one; a document without the executable bit is clearly no plugin and
	// is left out.
	if err := os.WriteFile(filepath.Join(bin, "notes.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = mustRun(t, dir, "", "plugins", "list", "--plugins-dir", bin)
	wantContains(t, "plugins list", out, "jsonl", "sink", "invalid", "counter", "did not complete the plugin handshake")
	if strings.Contains(out, "notes.txt") {
		t.Errorf("plugins list shows notes.txt:\n%s", out)
	}
}
