package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/pipelines"
	"github.com/tributary-io/tributary/plugins"
)

func newValidateCmd(a *app) *cobra.Command {
	var pluginDirs []string
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR",
		Short: "Check pipeline files: every error with file:line:column",
		Long: `Check pipeline files as tributary run does before it starts anything, and
start nothing: FILE, or every *.yaml/*.yml file directly in DIR, checked
together as one worker runs them. A valid file prints one line per pipeline.
Otherwise every problem is reported at once, one a line, as
FILE:LINE:COLUMN: PATH: what is wrong; the valid choices (the first line
after "Error: "), and the command exits 1.

The checks: YAML syntax; unknown keys and wrong types; required settings and
each connector's settings against its spec; transforms; names unique across
the files (connectors, consumer groups, topics); topics a sink reads that
nothing defines or writes; every ${VAR} set in the environment or given a
default; the TLS files that log.kafka names. Plugin connectors are started
briefly to read their specs, from --plugins-dir and the files' plugins.dirs.
Every key and its default: docs/pipelines.md.`,
		Args: exactArgs("FILE|DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, cat, err := a.loadPipelines(cmd.Context(), args[0], pluginDirs)
			defer cat.close()
			if err != nil {
				return err
			}
			var errs []error
			for _, p := range ps {
				if err := checkLogFiles(p.Log); err != nil {
					errs = append(errs, fmt.Errorf("%s: pipeline %s: %w", p.File, p.Name, err))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			for _, p := range ps {
				fmt.Fprintf(a.stdout, "%s: pipeline %s is valid (%d sources, %d sinks, %d topics)\n", p.File, p.Name, len(p.Sources), len(p.Sinks), len(p.Topics))
			}
			return nil
		},
	}
	addPluginsDirFlag(cmd, &pluginDirs)
	return cmd
}

// checkLogFiles reads what log.kafka names (TLS certificates, keys and CAs)
// as run will, so that validate finds a missing or unreadable file before
// a worker starts.
func checkLogFiles(l pipelines.Log) error {
	switch {
	case l.Backend == pipelines.BackendKafka:
		_, err := kafkaBackendOptions(l.Kafka)
		return err
	case l.Kafka.Listen != "":
		_, err := kafkaListenerOptions(l.Kafka)
		return err
	}
	return nil
}

func addPluginsDirFlag(cmd *cobra.Command, dirs *[]string) {
	cmd.Flags().StringSliceVar(dirs, "plugins-dir", []string{defaultPluginsDir},
		"directory of plugin connectors, besides the pipeline's plugins.dirs (repeat or comma-separate for several)")
}

// loadPipelines loads a file or a directory of pipeline files, with the
// built-in connectors and the plugins found in dirs and in the files'
// plugins.dirs. It returns the catalog the pipelines were checked with,
// which the worker must use too.
func (a *app) loadPipelines(ctx context.Context, path string, dirs []string) ([]*pipelines.Pipeline, catalog, error) {
	cat := newCatalog()
	load := func(opts pipelines.Options) ([]*pipelines.Pipeline, error) {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s: %w", path, err)
		}
		if fi.IsDir() {
			return pipelines.LoadDir(path, opts)
		}
		p, err := pipelines.LoadFile(path, opts)
		if err != nil {
			return nil, err
		}
		return []*pipelines.Pipeline{p}, nil
	}
	// First the shape only, to learn plugins.dirs; then with every
	// connector, built in or plugin.
	// A file with errors yields no shapes: the full load below then
	// reports every error at once, unknown connectors included.
	shapes, shapeErr := load(pipelines.Options{LookupEnv: a.lookupEnv})
	var all []string
	pins := make(map[string]string) // the files agree on them: LoadDir checks
	var callTimeout time.Duration   // plugins.call_timeout, alike in every file
	var missing []error
	for _, d := range dirs {
		// The default directory need not exist; one a user named must.
		if _, err := os.Stat(d); d == defaultPluginsDir && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		missing = append(missing, pluginDir{path: d}.checkExists())
		all = append(all, d)
	}
	for _, p := range shapes {
		for _, d := range p.Plugins.Dirs {
			missing = append(missing, pluginDir{path: d, file: p.File}.checkExists())
		}
		all = append(all, p.Plugins.Dirs...)
		maps.Copy(pins, p.Plugins.SHA256)
		callTimeout = max(callTimeout, p.Plugins.CallTimeout)
	}
	if err := errors.Join(missing...); err != nil {
		// The files' own errors too, since the full load does not run.
		return nil, cat, errors.Join(shapeErr, err)
	}
	var found []*plugins.Plugin
	var err error
	if len(all) > 0 {
		cat.plugins = plugins.NewHost(plugins.Options{Logger: a.logger, Pins: pins, CallTimeout: callTimeout})
		found, err = cat.plugins.Discover(ctx, all...)
		if err != nil {
			return nil, cat, fmt.Errorf("%w (check --plugins-dir and plugins.dirs)", err)
		}
	}
	if len(found) > 0 {
		reg := cat.connectors.Clone()
		if err := plugins.Register(reg, found); err != nil {
			a.logger.Warn("some plugins are not usable", "error", err)
		}
		cat.connectors = reg
	}
	ps, err := load(pipelines.Options{Catalog: cat, LookupEnv: a.lookupEnv})
	// A connector that is unknown because the plugin file meant to provide
	// it is not usable (a checksum mismatch, another protocol version, not
	// a plugin): say so where the pipeline names it.
	var list pipelines.ErrorList
	if errors.As(err, &list) && len(found) > 0 {
		at := make(map[string]*pipelines.Error)
		for _, e := range list {
			at[e.File+"\x00"+e.Path] = e
		}
		explain := func(file, path string, kind connect.Kind, name string) {
			e := at[file+"\x00"+path]
			if e == nil || !strings.HasPrefix(e.Message, "unknown ") {
				return
			}
			if why := plugins.Explain(found, kind, name); why != nil {
				e.Hint = strings.TrimPrefix(why.Error(), fmt.Sprintf("%s connector %q: ", kind, name))
			}
		}
		for _, p := range shapes {
			for i, s := range p.Sources {
				explain(p.File, fmt.Sprintf("sources[%d].connector", i), connect.KindSource, s.Connector)
			}
			for i, s := range p.Sinks {
				explain(p.File, fmt.Sprintf("sinks[%d].connector", i), connect.KindSink, s.Connector)
			}
		}
	}
	return ps, cat, err
}
