package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg"
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
				fmt.Fprintf(a.stdout, "%s: %d data files compacted into %d; %d snapshots expired\n",
					args[0], res.CompactedFiles, res.CompactionOutputFiles, res.ExpiredSnapshots)
				return nil
			},
		}
	}
	cmd.AddCommand(
		upkeep("compact", "Rewrite small data files into larger ones (stop the sink first, or a concurrent commit may make one of them retry)",
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
// configuration with defaults.
func (a *app) icebergSinkConfig(c *cobra.Command, file, name string) (connect.Config, error) {
	ps, cat, err := a.loadPipelines(c.Context(), file, nil)
	if err != nil {
		return connect.Config{}, err
	}
	conn, err := cat.connectors.Lookup(connect.KindSink, "iceberg")
	if err != nil {
		return connect.Config{}, err
	}
	var found []connect.Config
	for _, p := range ps {
		for _, s := range p.Sinks {
			if s.Connector != "iceberg" || (name != "" && s.Name != name) {
				continue
			}
			found = append(found, connect.Config{Pipeline: p.Name, Connector: s.Name, Values: conn.Spec.WithDefaults(s.Config), Spec: conn.Spec})
		}
	}
	switch {
	case len(found) == 0 && name != "":
		return connect.Config{}, fmt.Errorf("%s has no iceberg sink named %s", file, name)
	case len(found) == 0:
		return connect.Config{}, fmt.Errorf("%s has no iceberg sink", file)
	case len(found) > 1:
		return connect.Config{}, fmt.Errorf("%s has several iceberg sinks: choose one with --sink", file)
	}
	return found[0], nil
}
