package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tributary runs the command line args against dir with stdin and returns
// what it printed.
func tributary(t *testing.T, dir, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return tributaryCtx(t.Context(), t, dir, stdin, args...)
}

func tributaryCtx(ctx context.Context, t *testing.T, dir, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(ctx, append([]string{"--data-dir", dir}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

// mustRun is tributary failing the test on an error.
func mustRun(t *testing.T, dir, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errOut, err := tributary(t, dir, stdin, args...)
	if err != nil {
		t.Fatalf("tributary %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut)
	}
	return out, errOut
}

// mustFail runs a command that must fail and returns its error text.
func mustFail(t *testing.T, dir, stdin string, args ...string) error {
	t.Helper()
	out, _, err := tributary(t, dir, stdin, args...)
	if err == nil {
		t.Fatalf("tributary %s: succeeded, want an error; stdout:\n%s", strings.Join(args, " "), out)
	}
	return err
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

func TestReport_ExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{errors.New("boom"), exitError},
		{usageErrorf("tributary topics create", "bad"), exitUsage},
		{context.Canceled, exitInterrupted},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if got := report(&buf, tt.err); got != tt.want {
			t.Errorf("report(%v) = %d, want %d", tt.err, got, tt.want)
		}
		if tt.err != nil && !strings.HasPrefix(buf.String(), "Error: ") {
			t.Errorf("report(%v) printed %q, want an Error: line", tt.err, buf.String())
		}
	}
}

func TestRun_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"nosuchcommand"},
		{"topics", "create"},
		{"topics", "create", "t", "--bogus"},
		{"consume", "t", "-o", "yesterday"},
		{"topics", "alter", "t"},
		{"groups", "reset-offsets", "--group", "g", "--topic", "t"},
		// Flag values wrong before any I/O.
		{"topics", "create", "x", "--partitions", "0"},
		{"topics", "create", "x", "--partitions", "-3"},
		{"topics", "create", "x", "--replication-factor", "0"},
		{"topics", "alter", "t", "--partitions", "0"},
		{"consume", "t", "-p", "-2"},
		{"consume", "t", "-c", "-1"},
		{"consume", "t", "-o", "e@1", "-o", "e@2"}, // two stops
		{"consume", "t", "-K", ":", "-f", `%s\n`},  // -K is the default format's
		{"consume", "t", "-K", ":", "-J"},
		{"produce", "t", "-p", "-2"},
		{"connectors", "snapshot", "src", "--stop", "--pause"},
		{"connectors", "offsets", "s", "--set", `{"offsets":[]}`},
		{"connectors", "offsets", "s", "--set", `{"offsets":[{"partition":`},
	} {
		err := mustFail(t, dir, "", args...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v is not a usage error", args, err)
		}
	}
}

func TestRun_DataDirFromEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envDataDir, dir)
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"topics", "create", "envtopic"}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	got, _ := mustRun(t, dir, "", "topics", "list")
	if got != "envtopic\n" {
		t.Errorf("topics list = %q, want envtopic", got)
	}
}

func TestRun_DataDirLocked(t *testing.T) {
	dir := t.TempDir()
	c, err := openEmbedded(dir, nil)
	if err == nil {
		defer c.Close()
	} else {
		t.Fatal(err)
	}
	err = mustFail(t, dir, "", "topics", "list")
	wantContains(t, "error", err.Error(), "locked", "pid")
}

func TestVersion(t *testing.T) {
	out, _ := mustRun(t, t.TempDir(), "", "version")
	if !strings.HasPrefix(out, "tributary ") {
		t.Errorf("version = %q", out)
	}
}

func TestConnectorsSnapshot_UsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"web-events"}, "name the tables"},
		{[]string{"web-events", "--pause", "--stop"}, "only one of"},
		{[]string{"web-events", "public.orders", "--resume"}, "drop the table names"},
	} {
		err := mustFail(t, dir, "", append([]string{"connectors", "snapshot"}, c.args...)...)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("connectors snapshot %v: %v, want it to say %q", c.args, err, c.want)
		}
	}
}

// Every command that groups subcommands refuses an unknown one as a usage
// error (exit 2), as root does, suggesting the near miss; given no
// subcommand it prints its help and succeeds.
func TestRun_UnknownSubcommandIsUsageError(t *testing.T) {
	dir := t.TempDir()
	var parents []string
	for _, c := range newRootCmd(&app{}).Commands() {
		if c.HasSubCommands() {
			parents = append(parents, c.Name())
		}
	}
	for _, want := range []string{"topics", "groups", "connectors", "plugins", "iceberg"} {
		if !slices.Contains(parents, want) {
			t.Errorf("parents = %q, want %s among them", parents, want)
		}
	}
	for _, p := range parents {
		err := mustFail(t, dir, "", p, "crate", "foo")
		var buf bytes.Buffer
		if code := report(&buf, err); code != exitUsage {
			t.Errorf("%s crate foo: exit %d (%v), want %d", p, code, err, exitUsage)
		}
		wantContains(t, p+" crate foo", buf.String(), fmt.Sprintf(`unknown command "crate" for "tributary %s"`, p), fmt.Sprintf("Run 'tributary %s --help' for usage.", p))

		out, _, err := tributary(t, dir, "", p)
		if err != nil {
			t.Errorf("bare %s: %v, want its help", p, err)
		}
		wantContains(t, "bare "+p, out, "Available Commands:")
	}
	err := mustFail(t, dir, "", "topics", "crate", "foo")
	wantContains(t, "topics crate", err.Error(), "Did you mean this?\n\tcreate")
	out, _ := mustRun(t, dir, "", "topics", "help", "create")
	wantContains(t, "topics help create", out, "tributary topics create NAME [flags]")
}

// No flag's usage string holds a back-quoted word: pflag takes the first one
// as the name of the flag's value, so `--help` would print
// "--config tributary topics --help" instead of "--config stringArray".
func TestHelp_FlagUsageHasNoBackquotes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage %q holds a back quote, which pflag shows as the value's name", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{}))
}

// TestVersion_FlagAndCommandAgree: --version prints what `version` prints.
func TestVersion_FlagAndCommandAgree(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := mustRun(t, dir, "", "version")
	flag, _ := mustRun(t, dir, "", "--version")
	if cmd != flag || !strings.HasPrefix(cmd, "tributary ") {
		t.Errorf("version printed %q, --version %q; want the same line", cmd, flag)
	}
}

// A bad log level from the environment names the variable, not the flag the
// user never gave.
func TestRun_LogLevelFromEnv(t *testing.T) {
	t.Setenv(envLogLevel, "verbose")
	err := mustFail(t, t.TempDir(), "", "topics", "list")
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Errorf("error %v is not a usage error", err)
	}
	wantContains(t, "error", err.Error(), envLogLevel+`="verbose"`, "debug, info, warn or error")

	err = mustFail(t, t.TempDir(), "", "topics", "list", "--log-level", "loud")
	wantContains(t, "error", err.Error(), `--log-level "loud"`)
}

// The help of the commands that the README documents beyond their one line
// says what the README says: what validate checks and prints, and what a
// delete takes with it.
func TestHelp_SaysWhatTheREADMESays(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"validate", "--help"}, []string{"FILE:LINE:COLUMN", "every problem", "exits 1", "${VAR}", "--plugins-dir", "docs/pipelines.md"}},
		{[]string{"topics", "delete", "--help"}, []string{"all or nothing", "committed offsets", "internal topics"}},
		{[]string{"groups", "delete", "--help"}, []string{"sink connector", "tributary connectors stop"}},
	} {
		out, _ := mustRun(t, dir, "", tt.args...)
		wantContains(t, strings.Join(tt.args, " "), out, tt.wants...)
	}
}
