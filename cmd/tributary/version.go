package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

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

// versionString is the release, the commit when the build recorded one,
// the Go version and the platform.
func versionString() string {
	s := buildVersion()
	if c := buildCommit(); c != "" {
		s += " commit " + c
	}
	return fmt.Sprintf("%s (%s, %s/%s)", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
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
