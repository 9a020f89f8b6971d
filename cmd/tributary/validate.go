package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/pipelines"
)

func newValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|DIR",
		Short: "Check pipeline files: every error with file:line:column",
		Args:  exactArgs("FILE|DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := loadPipelines(args[0])
			if err != nil {
				return err
			}
			for _, p := range ps {
				fmt.Fprintf(a.stdout, "%s: pipeline %s is valid (%d sources, %d sinks, %d topics)\n", p.File, p.Name, len(p.Sources), len(p.Sinks), len(p.Topics))
			}
			return nil
		},
	}
}

// loadPipelines loads a file or a directory of pipeline files.
func loadPipelines(path string) ([]*pipelines.Pipeline, error) {
	opts := pipelines.Options{Catalog: newCatalog()}
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
