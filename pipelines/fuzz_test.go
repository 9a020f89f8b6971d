package pipelines

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes the loader panic, that it returns
// either a pipeline or an ErrorList, and that every error points into the
// file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.y*ml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "version: 1\n", "- a\n", "version: 1\nx: &a {<<: *a}\n",
		"version: 1\nsources: &s [*s]\n", "version: 1\nname: ${X:-${Y}}\n",
		"version: 1\nlog:\n\tdir: x\n", "\xff\xfe", "version: 1\n---\n",
		"version: 1\nplugins: {dirs: [p], sha256: {counter: " + strings.Repeat("ab", 32) + ", ../x: sha256:1, .h: , plugins.lock: [1]}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data, testOpts)
		if (p == nil) == (err == nil) {
			t.Fatalf("got pipeline %v and error %v: want exactly one", p, err)
		}
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("got %T %v, want a non-empty ErrorList", err, err)
			}
			lines := strings.Count(string(data), "\n") + strings.Count(string(data), "\r") + 1
			for _, e := range list {
				if e.File != "f.yaml" || e.Line < 0 || e.Line > lines || e.Column < 0 {
					t.Fatalf("error out of the file (%d lines): %v", lines, e)
				}
			}
			return
		}
		_ = p.Masked()
	})
}
