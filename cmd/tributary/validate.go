package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/pipelines"
	"github.com/tributary-io/tributary/plugins"
)

func newValidateCmd(a *app) *cobra.Command {
	var pluginDirs []string
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR",
		Short: "Check pipeline files: every error with file:line:column",
		Args:  exactArgs("FILE|DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, _, err := a.loadPipelines(cmd.Context(), args[0], pluginDirs)
			if err != nil {
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
	shapes, err := load(pipelines.Options{})
	if err != nil {
		return nil, cat, err
	}
	var all []string
	for _, d := range dirs {
		// The default directory need not exist; one a user named must.
		if _, err := os.Stat(d); d == defaultPluginsDir && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		all = append(all, d)
	}
	for _, p := range shapes {
		all = append(all, p.Plugins.Dirs...)
	}
	var found []*plugins.Plugin
	if len(all) > 0 {
		found, err = plugins.NewHost(plugins.Options{Logger: a.logger}).Discover(ctx, all...)
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
	ps, err := load(pipelines.Options{Catalog: cat})
	return ps, cat, err
}
