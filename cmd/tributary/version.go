package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// version and commit are set at build time (make build does it from git):
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=1a2b3c4" ./cmd/tributary
//
// Without them, a plain `go build` inside the repository still knows both
// from the build info that the go command records (vcs.revision and the
// module version it stamps from the tags).
var (
	version = "dev"
	commit  = ""
)

// buildVersion is the release: -X main.version, else the main module's
// version from the build info, else "dev".
func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// buildCommit is the commit: -X main.commit, else the build info's
// vcs.revision (shortened, "-dirty" when the tree had changes), else "".
func buildCommit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return commitFromSettings(bi.Settings)
}

func commitFromSettings(settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// versionString is the release, then in parentheses the commit (unless
// the release already names it), the Go version and the platform:
//
//	v0.3.1 (commit 1a2b3c4, go1.26.0, linux/amd64)
//	v0.3.1-2-g1a2b3c4 (go1.26.0, linux/amd64)
//
// The release comes first, so that `tributary version` keeps it as its
// second word.
func versionString() string {
	v, c := buildVersion(), buildCommit()
	facts := []string{runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
	if c != "" && !namesCommit(v, c) {
		facts = slices.Insert(facts, 0, "commit "+c)
	}
	return fmt.Sprintf("%s (%s)", v, strings.Join(facts, ", "))
}

// namesCommit reports whether the release v already says what commit c
// ("1a2b3c4", "1a2b3c4-dirty") says: v holds the commit's hash, or a
// prefix of it, as a part of its own (git describe --always prints the
// hash, a tag plus commits "v0.3.1-2-g1a2b3c4", a Go pseudo-version
// "v0.0.0-20261130153528-1a2b3c4d5e6f+dirty"), and says dirty if c does.
func namesCommit(v, c string) bool {
	hash, dirty := strings.CutSuffix(c, "-dirty")
	if len(hash) < 7 || (dirty && !strings.Contains(v, "dirty")) {
		return false
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '-' || r == '+' || r == '.' }) {
		part = strings.TrimPrefix(part, "g")
		if len(part) >= 7 && (strings.HasPrefix(hash, part) || strings.HasPrefix(part, hash)) {
			return true
		}
	}
	return false
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of tributary",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(a.stdout, "tributary %s\n", versionString())
			return nil
		},
	}
}
