package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Environment variables that set global flags.
const (
	envDataDir  = "TRIBUTARY_DATA_DIR"
	envLogLevel = "TRIBUTARY_LOG_LEVEL"
)

const defaultDataDir = "./data"

// app is one invocation of the binary: its streams, global flags, and the
// log client the commands share, opened on first use and closed by run.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	dataDir string
	// dataDirSet says --data-dir was given on the command line: run then
	// puts the pipelines' embedded log there (see pipelineEnv).
	dataDirSet bool
	server     string // a running worker's REST API (--server); "" means the data directory
	logLevel   string
	logger     *slog.Logger

	client logClient
}

// run executes the command line args (without the program name). It is the
// whole program but for signals and the exit code, which main decides.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if ue := (*usageError)(nil); err != nil && !errors.As(err, &ue) && strings.HasPrefix(err.Error(), "unknown command") {
		err = &usageError{cmd: "tributary", err: err}
	}
	if cerr := a.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close log: %w", cerr))
	}
	return err
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tributary",
		Short: "Change data capture and connectors on a built-in Kafka-model partition log",
		Long: `Tributary captures changes and events into its own partition log and delivers
them to sinks. The log commands work on the data directory directly (only one
process may have it open at a time), or, with --server, through the REST API of
the worker that holds it.`,
		Version:           versionString(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setup(cmd)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{cmd: cmd.CommandPath(), err: err}
	})
	dataDir := os.Getenv(envDataDir)
	if dataDir == "" {
		dataDir = defaultDataDir
	}
	level := os.Getenv(envLogLevel)
	if level == "" {
		level = "warn"
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.dataDir, "data-dir", dataDir, "data directory of the log (env "+envDataDir+")")
	pf.StringVar(&a.server, "server", os.Getenv(envServer), "address of a running worker's REST API (e.g. 127.0.0.1:8083); log commands then go through it instead of opening --data-dir (env "+envServer+")")
	pf.StringVar(&a.logLevel, "log-level", level, "level of log messages on stderr: debug, info, warn or error (env "+envLogLevel+")")

	root.AddCommand(newTopicsCmd(a), newProduceCmd(a), newConsumeCmd(a), newGroupsCmd(a), newVersionCmd(a),
		newRunCmd(a), newValidateCmd(a), newConnectorsCmd(a), newPluginsCmd(a), newIcebergCmd(a))
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
	}
	// --version prints what `tributary version` prints (cobra's default
	// adds the word "version").
	root.SetVersionTemplate("tributary {{.Version}}\n")
	return root
}

// refuseUnknownSubcommands makes every command below root that only groups
// subcommands (topics, groups, connectors, ...) refuse an unknown one with a
// usage error (exit 2), as cobra does for root itself: without a Run, cobra
// would print the group's help and succeed. A group given no subcommand
// still prints its help and exits 0, as kafka-topics.sh does given no
// action; so do `GROUP help` and `GROUP help SUBCOMMAND`.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	if !cmd.HasSubCommands() {
		return
	}
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default for root
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return cmd.Help()
		case args[0] == "help":
			target := cmd
			if len(args) > 1 {
				if sub, _, err := cmd.Find(args[1:]); err == nil && sub != cmd {
					target = sub
				}
			}
			return target.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return &usageError{cmd: cmd.CommandPath(), err: errors.New(msg)}
	}
}

// setup configures logging; it runs before every command.
func (a *app) setup(cmd *cobra.Command) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(a.logLevel)); err != nil {
		src := "--log-level " // the flag, or the variable its default came from
		if !changed(cmd.Flags(), "log-level") {
			src = envLogLevel + "="
		}
		return &usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("%s%q: want debug, info, warn or error", src, a.logLevel)}
	}
	a.logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
	a.dataDirSet = changed(cmd.Flags(), "data-dir")
	return nil
}

// lookupEnv resolves ${VAR} in pipeline files: as the environment, except
// that --data-dir, when given, is the value of ${TRIBUTARY_DATA_DIR}, so
// that a path a file derives from it (an Iceberg warehouse, say) follows
// the log.
func (a *app) lookupEnv(name string) (string, bool) {
	if name == envDataDir && a.dataDirSet {
		return a.dataDir, true
	}
	return os.LookupEnv(name)
}

// open returns the log client: with --server (env TRIBUTARY_SERVER) a client
// of a running worker's REST API, else the data directory, opened on first
// use. The data directory must hold a log (see checkDataDir): open is for
// the commands that read a log or change what is in it; the ones that add
// to it use openOrCreate.
func (a *app) open() (logClient, error) {
	if a.client == nil && a.server == "" {
		if err := checkDataDir(a.dataDir); err != nil {
			return nil, err
		}
	}
	return a.openOrCreate()
}

// openOrCreate is open for the commands that add to a log (topics create,
// produce): they make the log where the data directory holds none.
func (a *app) openOrCreate() (logClient, error) {
	if a.client != nil {
		return a.client, nil
	}
	if a.logger == nil {
		a.logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if a.server != "" {
		a.client = newRESTClient(a.server)
		return a.client, nil
	}
	c, err := openEmbedded(a.dataDir, a.logger)
	if err != nil {
		return nil, err
	}
	a.client = c
	return c, nil
}

func (a *app) close() error {
	if a.client == nil {
		return nil
	}
	err := a.client.Close()
	a.client = nil
	return err
}

// exactArgs is cobra.ExactArgs with a usage error naming the arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErrorf(cmd.CommandPath(), "%s takes %d argument(s) (%s), got %d", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// noArgs refuses positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd.CommandPath(), "%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// changed reports whether the flag name was set on the command line.
func changed(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
