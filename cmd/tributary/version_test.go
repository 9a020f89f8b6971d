package main

import (
	"fmt"
	"runtime"
	"testing"
)

// TestVersion_EachFactOnce: `tributary version` prints the release, then
// in parentheses the commit, the Go version and the platform, each once.
// The release stays the second word (what scripts read); when it already
// names the commit (git describe of an untagged tree, a tag plus commits,
// a Go pseudo-version), the commit is not printed again.
func TestVersion_EachFactOnce(t *testing.T) {
	platform := fmt.Sprintf("%s, %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	cases := []struct{ version, commit, want string }{
		{"v0.3.1", "1a2b3c4", "tributary v0.3.1 (commit 1a2b3c4, " + platform + ")"},
		{"v0.3.1-dirty", "1a2b3c4", "tributary v0.3.1-dirty (commit 1a2b3c4, " + platform + ")"},
		// make build without a tag: git describe --always is the commit.
		{"1a2b3c4", "1a2b3c4", "tributary 1a2b3c4 (" + platform + ")"},
		{"1a2b3c4-dirty", "1a2b3c4", "tributary 1a2b3c4-dirty (" + platform + ")"},
		// commits after a tag: git describe names the commit after "g".
		{"v0.3.1-2-g1a2b3c4", "1a2b3c4", "tributary v0.3.1-2-g1a2b3c4 (" + platform + ")"},
		// go build without a tag: a pseudo-version and the build info's commit.
		{"v0.0.0-20261130153528-1a2b3c4d5e6f+dirty", "1a2b3c4d5e6f-dirty", "tributary v0.0.0-20261130153528-1a2b3c4d5e6f+dirty (" + platform + ")"},
		// the commit's dirtiness is a fact the version does not give.
		{"1a2b3c4", "1a2b3c4-dirty", "tributary 1a2b3c4 (commit 1a2b3c4-dirty, " + platform + ")"},
		{"v0.3.1", "", "tributary v0.3.1 (" + platform + ")"},
	}
	for _, c := range cases {
		setBuildStamp(t, c.version, c.commit)
		out, _ := mustRun(t, t.TempDir(), "", "version")
		if want := c.want + "\n"; out != want {
			t.Errorf("version %q, commit %q: printed %q, want %q", c.version, c.commit, out, want)
		}
	}
}

// setBuildStamp sets what -ldflags -X would, until the test ends.
func setBuildStamp(t *testing.T, v, c string) {
	t.Helper()
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	version, commit = v, c
}
