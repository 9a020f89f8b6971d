package pipelines

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse_PluginPins(t *testing.T) {
	sumA := strings.Repeat("0123456789abcdef", 4)
	sumB := strings.Repeat("fedcba9876543210", 4)
	p, err := Parse("p.yaml", []byte(`
version: 1
plugins:
  dirs: [./plugins]
  sha256:
    counter: `+sumA+`
    jsonl: "sha256:`+strings.ToUpper(sumB)+`"
    tributary-x: ${X_SUM}
`), Options{LookupEnv: testEnv(map[string]string{"X_SUM": sumA})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"counter": sumA, "jsonl": sumB, "tributary-x": sumA}
	if !reflect.DeepEqual(p.Plugins.SHA256, want) {
		t.Errorf("pins: got %q, want %q", p.Plugins.SHA256, want)
	}
	m := p.Masked()
	m.Plugins.SHA256["counter"] = "changed"
	if p.Plugins.SHA256["counter"] != sumA {
		t.Error("Masked shares the pins with the original")
	}

	p, err = Parse("p.yaml", []byte("version: 1\nplugins: {sha256: }\n"), testOpts)
	if err != nil || p.Plugins.SHA256 != nil {
		t.Errorf("an empty sha256: %v, %v", p, err)
	}
}

func TestParse_PluginPinErrors(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"not a mapping", "version: 1\nplugins: {sha256: [" + sum + "]}\n", []string{
			`p.yaml:2:19: plugins.sha256: plugins.sha256 must be a mapping of plugin file names to sha256 sums, got a list; e.g. sha256: {counter: <the first field of ` + "`sha256sum counter`" + `>}`,
		}},
		{"bad sums", "version: 1\nplugins:\n  sha256:\n    a: " + sum[:63] + "\n    b: " + sum[:63] + "g\n    c:\n    d: [x]\n    e: sha512:" + sum + "\n", []string{
			`p.yaml:4:8: plugins.sha256.a: expected a sha256 (64 hex digits), got "abababababababababababababababababababab..."; the first field of ` + "`sha256sum a`",
			`p.yaml:5:8: plugins.sha256.b: expected a sha256 (64 hex digits), got "abababababababababababababababababababab..."; the first field of ` + "`sha256sum b`",
			`p.yaml:6:7: plugins.sha256.c: expected a sha256 (64 hex digits), got no value; the first field of ` + "`sha256sum c`",
			`p.yaml:7:8: plugins.sha256.d: expected a sha256 (64 hex digits), got a list`,
			`p.yaml:8:8: plugins.sha256.e: expected a sha256 (64 hex digits), got "sha512:ababababababababababababababababa..."; the first field of ` + "`sha256sum e`",
		}},
		{"bad names", "version: 1\nplugins:\n  sha256:\n    bin/counter: " + sum + "\n    .hidden: " + sum + "\n    plugins.lock: " + sum + "\n    \"..\": " + sum + "\n", []string{
			`p.yaml:4:5: plugins.sha256.bin/counter: "bin/counter" is not a plugin file name; name the file as it is in its plugin directory, e.g. counter`,
			`p.yaml:5:5: plugins.sha256..hidden: ".hidden" is a hidden file, which plugin discovery skips; rename the file: hidden files are not plugins`,
			`p.yaml:6:5: plugins.sha256.plugins.lock: plugins.lock is the lock file of a plugin directory, not a plugin`,
			`p.yaml:7:5: plugins.sha256...: ".." is not a plugin file name; name the file as it is in its plugin directory, e.g. counter`,
		}},
		{"twice", "version: 1\nplugins:\n  sha256:\n    a: " + sum + "\n    a: " + sum + "\n", []string{
			`p.yaml:5:5: plugins.sha256.a: key "a" is given twice (first at 4:5); remove one of them`,
		}},
		{"unset variable", "version: 1\nplugins: {sha256: {a: '${NOPE}'}}\n", []string{
			`p.yaml:2:24: plugins.sha256.a: environment variable NOPE is not set; set it, or give a default: ${NOPE:-value}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.src), testOpts)
			if err == nil {
				t.Fatal("got no error")
			}
			list := errorList(t, err)
			if got := strings.Split(list.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), annotate(tc.src, list))
			}
		})
	}
}

// The pipelines of a directory share one plugin host, so a file pinned in
// two of them must be pinned to the same sum.
func TestLoadDir_PluginPins(t *testing.T) {
	sumA, sumB := strings.Repeat("aa", 32), strings.Repeat("bb", 32)
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "version: 1\nplugins: {sha256: {counter: "+sumA+", jsonl: "+sumB+"}}\n")
	write("b.yaml", "version: 1\nplugins: {sha256: {counter: "+sumA+"}}\n")
	if _, err := LoadDir(dir, testOpts); err != nil {
		t.Fatalf("the same pin twice: %v", err)
	}
	write("c.yaml", "version: 1\nplugins: {sha256: {jsonl: "+sumA+"}}\n")
	_, err := LoadDir(dir, testOpts)
	want := filepath.Join(dir, "c.yaml") + `:2:27: plugins.sha256.jsonl: plugin file "jsonl" is pinned to another sha256 in ` +
		filepath.Join(dir, "a.yaml") + `:2:102; the pipelines loaded together share their plugins: pin each file to one sum`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// plugins.call_timeout: a duration of a second or more; the files loaded
// together agree on it (one host runs their plugins).
func TestPlugins_CallTimeout(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nplugins: {call_timeout: 2m}\n"), testOpts)
	if err != nil || p.Plugins.CallTimeout != 2*time.Minute {
		t.Fatalf("Parse = %+v, %v; want call_timeout 2m", p.Plugins, err)
	}
	for bad, want := range map[string]string{
		"version: 1\nplugins: {call_timeout: 500ms}\n": "p.yaml:2:25: plugins.call_timeout: plugins.call_timeout 500ms is under a second",
		"version: 1\nplugins: {call_timeout: soon}\n":  "p.yaml:2:25: plugins.call_timeout: expected a duration",
	} {
		if _, err := Parse("p.yaml", []byte(bad), testOpts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", bad, err, want)
		}
	}

	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "version: 1\nname: a\nplugins: {call_timeout: 1m}\n")
	write("b.yaml", "version: 1\nname: b\nplugins: {call_timeout: 60s}\n")
	write("c.yaml", "version: 1\nname: c\n")
	if _, err := LoadDir(dir, testOpts); err != nil {
		t.Fatalf("the same call_timeout twice: %v", err)
	}
	write("d.yaml", "version: 1\nname: d\nplugins: {call_timeout: 2m}\n")
	_, err = LoadDir(dir, testOpts)
	want := filepath.Join(dir, "d.yaml") + ":3:25: plugins.call_timeout: plugins.call_timeout 2m0s differs from 1m0s in " + filepath.Join(dir, "a.yaml") + ":3:25"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
