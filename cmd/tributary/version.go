package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release, set at build time:
//
//	go build -ldflags "-X main.version=v0.1.0" ./cmd/tributary
var version = "dev"

// versionString is the release, the commit when the build recorded one,
// the Go version and the platform.
func versionString() string {
	commit := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		}
	}
	s := version
	if commit != "" {
		s += " commit " + commit
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
