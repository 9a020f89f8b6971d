package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/pipelines"
)

// newIcebergCmd is table upkeep for an iceberg sink of a pipeline file: the
// sink's catalog and warehouse settings say where the table is.
func newIcebergCmd(a *app) *cobra.Command {
	var file, sinkName string
	cmd := &cobra.Command{
		Use:   "iceberg",
		Short: "Compact an Iceberg table, expire its snapshots (as an iceberg sink does on its own schedule) or remove orphan files",
	}
	cmd.PersistentFlags().StringVar(&file, "pipeline", "", "pipeline file that holds the iceberg sink (required)")
	cmd.PersistentFlags().StringVar(&sinkName, "sink", "", "name of the iceberg sink in that file (default: its only iceberg sink)")
	upkeep := func(use, short string, run func(*cobra.Command, connect.Config, string) (iceberg.UpkeepResult, error)) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAMESPACE.TABLE", Short: short, Args: exactArgs("NAMESPACE.TABLE"),
			RunE: func(c *cobra.Command, args []string) error {
				if file == "" {
					return usageErrorf(c.CommandPath(), "--pipeline FILE is required: the iceberg sink's settings say where the table is")
				}
				cfg, err := a.icebergSinkConfig(c, file, sinkName)
				if err != nil {
					return err
				}
				res, err := run(c, cfg, args[0])
				if err != nil {
					return err
				}
				if use == "compact" {
					fmt.Fprintf(a.stdout, "%s: %d data files compacted into %d\n", args[0], res.CompactedFiles, res.CompactionOutputFiles)
				} else {
					fmt.Fprintf(a.stdout, "%s: %d snapshots expired\n", args[0], res.ExpiredSnapshots)
				}
				return nil
			},
		}
	}
	cmd.AddCommand(
		upkeep("compact", "Rewrite small data files into larger ones, in partitions with at least compact.min.files of them (stop the sink first, or a concurrent commit may make one of them retry)",
			func(c *cobra.Command, cfg connect.Config, t string) (iceberg.UpkeepResult, error) {
				return iceberg.Compact(c.Context(), cfg, t)
			}),
		upkeep("expire", "Expire old snapshots (expire.older.than, expire.retain.last of the sink)",
			func(c *cobra.Command, cfg connect.Config, t string) (iceberg.UpkeepResult, error) {
				return iceberg.Expire(c.Context(), cfg, t)
			}),
	)
	var olderThan time.Duration
	var dryRun bool
	orphans := &cobra.Command{
		Use: "remove-orphans NAMESPACE.TABLE", Args: exactArgs("NAMESPACE.TABLE"),
		Short: "Delete files under a table's location that no snapshot references (left by crashes before a commit)",
		RunE: func(c *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf(c.CommandPath(), "--pipeline FILE is required: the iceberg sink's settings say where the table is")
			}
			cfg, err := a.icebergSinkConfig(c, file, sinkName)
			if err != nil {
				return err
			}
			res, err := iceberg.RemoveOrphans(c.Context(), cfg, args[0], iceberg.OrphanOptions{OlderThan: olderThan, DryRun: dryRun})
			if err != nil {
				return err
			}
			for _, f := range res.Files {
				fmt.Fprintln(a.stdout, f)
			}
			fmt.Fprintf(a.stdout, "%s: %d orphan files (%d bytes), %d deleted\n", args[0], len(res.Files), res.Bytes, res.Deleted)
			return nil
		},
	}
	orphans.Flags().DurationVar(&olderThan, "older-than", 72*time.Hour, "only files older than this (at least 1h and twice the sink's commit.interval)")
	orphans.Flags().BoolVar(&dryRun, "dry-run", false, "list the files, delete nothing")
	cmd.AddCommand(orphans)
	return cmd
}

// icebergSinkConfig finds an iceberg sink in a pipeline file and returns its
// configuration with defaults. Only the sink's settings matter here: an
// environment variable that only other connectors of the file use need not
// be set.
func (a *app) icebergSinkConfig(c *cobra.Command, file, name string) (connect.Config, error) {
	ps, cat, err := a.loadPipelines(c.Context(), file, nil)
	defer cat.close()
	if err != nil {
		unset := unsetVars(err)
		if len(unset) == 0 {
			return connect.Config{}, err
		}
		// Load again with a stand-in value for each unset variable, then
		// refuse only when the sink itself uses one.
		lookup := func(n string) (string, bool) {
			if v, ok := os.LookupEnv(n); ok {
				return v, true
			}
			if _, ok := unset[n]; ok {
				return unsetStandIn(n), true
			}
			return "", false
		}
		var err2 error
		if ps, cat, err2 = loadPipelinesEnv(file, lookup); err2 != nil {
			return connect.Config{}, fmt.Errorf("%w\n(%s)", err, unsetNote(unset))
		}
		cfg, err2 := findIcebergSink(ps, cat, file, name)
		if err2 != nil {
			return cfg, err2
		}
		for _, k := range sortedKeys(cfg.Values) {
			for n := range unset {
				if strings.Contains(cfg.Values[k], unsetStandIn(n)) {
					return connect.Config{}, fmt.Errorf("iceberg sink %s: %s uses environment variable %s, which is not set; set it", cfg.Connector, k, n)
				}
			}
		}
		return cfg, nil
	}
	return findIcebergSink(ps, cat, file, name)
}

func findIcebergSink(ps []*pipelines.Pipeline, cat catalog, file, name string) (connect.Config, error) {
	conn, err := cat.connectors.Lookup(connect.KindSink, "iceberg")
	if err != nil {
		return connect.Config{}, err
	}
	var found []connect.Config
	var names []string // of every iceberg sink, to choose from
	for _, p := range ps {
		for _, s := range p.Sinks {
			if s.Connector != "iceberg" {
				continue
			}
			names = append(names, s.Name)
			if name != "" && s.Name != name {
				continue
			}
			found = append(found, connect.Config{Pipeline: p.Name, Connector: s.Name, Values: conn.Spec.WithDefaults(s.Config), Spec: conn.Spec})
		}
	}
	switch {
	case len(found) == 0 && len(names) > 0:
		return connect.Config{}, fmt.Errorf("%s has no iceberg sink named %s; its iceberg sinks: %s", file, name, strings.Join(names, ", "))
	case len(found) == 0:
		return connect.Config{}, fmt.Errorf("%s has no iceberg sink; give the pipeline file that holds the table's sink with --pipeline FILE", file)
	case len(found) > 1:
		return connect.Config{}, fmt.Errorf("%s has several iceberg sinks (%s): choose one with --sink NAME", file, strings.Join(names, ", "))
	}
	return found[0], nil
}

var unsetVarMessage = regexp.MustCompile(`^environment variable (\w+) is not set$`)

// unsetVars returns, when every problem of a pipeline load is an unset
// environment variable, each variable with the places that use it; nil
// otherwise.
func unsetVars(err error) map[string][]string {
	var list pipelines.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, e := range list {
		m := unsetVarMessage.FindStringSubmatch(e.Message)
		if m == nil {
			return nil
		}
		out[m[1]] = append(out[m[1]], e.Path)
	}
	return out
}

func unsetStandIn(name string) string { return "unset-variable-" + name }

func unsetNote(unset map[string][]string) string {
	var parts []string
	for _, n := range sortedKeys(unset) {
		parts = append(parts, fmt.Sprintf("%s is used by %s", n, strings.Join(unset[n], ", ")))
	}
	return strings.Join(parts, "; ") + "; only the iceberg sink's own variables are needed here"
}

// loadPipelinesEnv loads a pipeline file or directory with the built-in
// connectors and transforms, resolving ${VAR} with lookup.
func loadPipelinesEnv(path string, lookup func(string) (string, bool)) ([]*pipelines.Pipeline, catalog, error) {
	cat := newCatalog()
	opts := pipelines.Options{Catalog: cat, LookupEnv: lookup}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, cat, fmt.Errorf("pipeline %s: %w", path, err)
	}
	if fi.IsDir() {
		ps, err := pipelines.LoadDir(path, opts)
		return ps, cat, err
	}
	p, err := pipelines.LoadFile(path, opts)
	if err != nil {
		return nil, cat, err
	}
	return []*pipelines.Pipeline{p}, cat, nil
}
