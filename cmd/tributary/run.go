package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

func newRunCmd(a *app) *cobra.Command {
	var restAddr string
	var drain time.Duration
	cmd := &cobra.Command{
		Use:   "run FILE|DIR",
		Short: "Run pipelines in an embedded worker, with the REST API",
		Long: `Run the pipelines of a file, or of every *.yaml/*.yml file of a directory, in
one worker on the embedded log, and serve the REST API (Kafka Connect's shape)
with /metrics. SIGINT or SIGTERM drains: tasks finish their batch, commit and
close, within --drain-timeout.`,
		Args: exactArgs("FILE|DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := loadPipelines(args[0])
			if err != nil {
				return err
			}
			return a.runWorker(cmd.Context(), ps, restAddr, drain)
		},
	}
	cmd.Flags().StringVar(&restAddr, "rest-addr", rest.DefaultAddr, "address of the REST API")
	cmd.Flags().DurationVar(&drain, "drain-timeout", 30*time.Second, "how long a shutdown waits for tasks to commit")
	return cmd
}

func (a *app) runWorker(ctx context.Context, ps []*pipelines.Pipeline, restAddr string, drain time.Duration) error {
	dir := ps[0].Log.Dir
	for _, p := range ps {
		if p.Log.Backend != pipelines.BackendEmbedded {
			return fmt.Errorf("pipeline %s: log backend %q is not available in this build yet; use embedded", p.Name, p.Log.Backend)
		}
		if p.Log.Dir != dir {
			return fmt.Errorf("pipelines %s and %s use different data directories (%s, %s); one worker runs one log", ps[0].Name, p.Name, dir, p.Log.Dir)
		}
	}
	// Connectors log through slog's default logger: make it the worker's,
	// so --log-level applies to them too.
	prev := slog.Default()
	slog.SetDefault(a.logger)
	defer slog.SetDefault(prev)
	partitions := ps[0].Log.Defaults.Partitions
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: a.logger, NumPartitions: partitions})
	if err != nil {
		return err
	}
	defer l.Close()
	cat := newCatalog()
	w, err := engine.NewWorker(ctx, engine.Options{
		Backend: engine.NewEmbedded(l, a.logger), Connectors: cat.connectors,
		Transforms: cat.transformFactory(), Logger: a.logger, WorkerID: restAddr,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", restAddr)
	if err != nil {
		return fmt.Errorf("listen on %s for the REST API: %w (choose another with --rest-addr)", restAddr, err)
	}
	srv := &http.Server{Handler: rest.New(w, l, version, a.logger), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	a.logger.Info("worker started", "rest", "http://"+ln.Addr().String(), "data_dir", dir, "pipelines", len(ps))
	fmt.Fprintf(a.stderr, "%% worker running; REST API on http://%s (Ctrl-C to stop)\n", ln.Addr())
	for _, p := range ps {
		if err := w.StartPipeline(ctx, p); err != nil {
			_ = srv.Close()
			_ = w.Shutdown(context.Background())
			return err
		}
	}
	progressDone := make(chan struct{})
	pctx, stopProgress := context.WithCancel(ctx)
	go func() {
		defer close(progressDone)
		if isTerminal(a.stderr) {
			showProgress(pctx, w, a.stderr, 500*time.Millisecond)
		}
	}()
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("REST API stopped", "error", err)
		}
	}
	stopProgress()
	<-progressDone
	fmt.Fprintln(a.stderr, "% draining: tasks finish their batch and commit")
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return w.Shutdown(sctx)
}
