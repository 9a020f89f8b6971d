package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/kafkabackend"
	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
	"github.com/tributary-io/tributary/pipelines"
)

func newRunCmd(a *app) *cobra.Command {
	var restAddr string
	var drain time.Duration
	var pluginDirs []string
	cmd := &cobra.Command{
		Use:   "run FILE|DIR",
		Short: "Run pipelines in an embedded worker, with the REST API",
		Long: `Run the pipelines of a file, or of every *.yaml/*.yml file of a directory, in
one worker on the pipelines' log (embedded, or a Kafka cluster with backend:
kafka), and serve the REST API (Kafka Connect's shape) with /metrics.
--data-dir, when given, replaces the embedded log's log.dir. SIGINT or SIGTERM
drains: tasks finish their batch, commit and close, within --drain-timeout.`,
		Args: exactArgs("FILE|DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, cat, err := a.loadPipelines(cmd.Context(), args[0], a.pluginDirsToScan(pluginDirs))
			defer cat.close() // after the worker's shutdown: its connectors may still redact
			if err != nil {
				return err
			}
			return a.runWorker(cmd.Context(), ps, cat, restAddr, drain)
		},
	}
	cmd.Flags().StringVar(&restAddr, "rest-addr", rest.DefaultAddr, "address of the REST API")
	cmd.Flags().DurationVar(&drain, "drain-timeout", 30*time.Second, "how long a shutdown waits for tasks to commit")
	addPluginsDirFlag(cmd, &pluginDirs)
	return cmd
}

func (a *app) runWorker(ctx context.Context, ps []*pipelines.Pipeline, cat catalog, restAddr string, drain time.Duration) error {
	if a.dataDirSet {
		// --data-dir wins over log.dir (and so over TRIBUTARY_DATA_DIR,
		// which a file's log.dir may refer to).
		for _, p := range ps {
			if p.Log.Backend != pipelines.BackendEmbedded {
				return usageErrorf("tributary run", "--data-dir is the embedded log's directory, but pipeline %s (%s) uses backend %s, which keeps its data on the cluster: leave --data-dir out", p.Name, p.File, p.Log.Backend)
			}
			p.Log.Dir = a.dataDir
		}
	}
	lc := ps[0].Log
	for _, p := range ps[1:] {
		if p.Log.Backend != lc.Backend || p.Log.Dir != lc.Dir {
			return fmt.Errorf("pipelines %s and %s use different logs (%s %s, %s %s); one worker runs one log", ps[0].Name, p.Name, lc.Backend, lc.Dir, p.Log.Backend, p.Log.Dir)
		}
	}
	// Connectors log through slog's default logger: make it the worker's,
	// so --log-level applies to them too.
	prev := slog.Default()
	slog.SetDefault(a.logger)
	defer slog.SetDefault(prev)

	// The REST address is taken first, so that a busy one leaves no data
	// directory (nor topics) behind, and reaches no brokers.
	ln, err := net.Listen("tcp", restAddr)
	if err != nil {
		return fmt.Errorf("listen on %s for the REST API: %w (choose another with --rest-addr)", restAddr, err)
	}
	defer ln.Close() // until srv.Serve has it; closing it again then is harmless

	var backend engine.Backend
	var l *tlog.Log // the embedded log; nil with the kafka backend
	switch lc.Backend {
	case pipelines.BackendKafka:
		opts, err := kafkaBackendOptions(lc.Kafka)
		if err != nil {
			return err
		}
		opts.Logger = a.logger
		kb, err := kafkabackend.New(ctx, opts)
		if err != nil {
			return fmt.Errorf("%w (check log.kafka of %s: brokers, tls, sasl; and that the cluster is up and reachable from here)", err, ps[0].File)
		}
		defer kb.Close()
		backend = kb
	default:
		maxParts, err := maxPartitionsFromEnv()
		if err != nil {
			return err
		}
		// The listener's files are read before the log is opened (and its
		// directory made), so that a missing certificate leaves nothing
		// behind.
		var lopts kafka.Options
		if lc.Kafka.Listen != "" {
			if lopts, err = kafkaListenerOptions(lc.Kafka); err != nil {
				return err
			}
		}
		l, err = tlog.Open(tlog.Options{Dir: lc.Dir, Logger: a.logger, NumPartitions: lc.Defaults.Partitions, MaxPartitions: maxParts})
		if errors.Is(err, tlog.ErrDataDirLocked) {
			return fmt.Errorf("%w; to run another worker beside it, give this one a data directory of its own: --data-dir DIR (or log.dir)", err)
		}
		if err != nil {
			return err
		}
		defer l.Close()
		backend = engine.NewEmbedded(l, a.logger)
		if lc.Kafka.Listen != "" {
			lopts.Logger = a.logger
			ks, err := kafka.Listen(ctx, lc.Kafka.Listen, l, lopts)
			if err != nil {
				return fmt.Errorf("serve the Kafka protocol on %s (log.kafka.listen): %w", lc.Kafka.Listen, err)
			}
			defer ks.Close()
			fmt.Fprintf(a.stderr, "%% Kafka protocol on %s (kcat -b %s -L%s)\n", ks.Addr(), ks.Addr(), kcatHint(lc.Kafka))
		}
	}
	w, err := engine.NewWorker(ctx, engine.Options{
		Backend: backend, Connectors: cat.connectors,
		Transforms: cat.transformFactory(), Logger: a.logger, WorkerID: restAddr,
	})
	if err != nil {
		return err
	}
	api := rest.New(w, l, buildVersion(), a.logger)
	api.SetCommit(buildCommit())
	api.SetStarting(true) // GET /health: 503 until the pipelines are started
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	a.logger.Info("worker started", "rest", "http://"+ln.Addr().String(), "backend", lc.Backend, "data_dir", lc.Dir, "pipelines", len(ps))
	fmt.Fprintf(a.stderr, "%% worker running; REST API on http://%s (Ctrl-C to stop)\n", ln.Addr())
	for _, p := range ps {
		if err := w.StartPipeline(ctx, p); err != nil {
			_ = srv.Close()
			_ = w.Shutdown(context.Background())
			return err
		}
	}
	api.SetStarting(false)
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
	if err := w.Shutdown(sctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("drain: a task did not finish its batch within --drain-timeout %s (%w); what it had not committed is delivered again at the next start (raise --drain-timeout to let it finish)", drain, err)
		}
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// pluginDirsToScan drops the --plugins-dir entries that cannot hold a
// plugin, so that a worker starts as Kafka Connect's does with a bad
// plugin.path: a directory that does not exist is a warning, not a fatal
// error, and one without any executable file (the repository's own
// ./plugins holds Go source) is skipped without a warning per file.
func (a *app) pluginDirsToScan(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		switch {
		case err != nil && d == defaultPluginsDir && errors.Is(err, fs.ErrNotExist):
			continue // the default need not exist
		case err != nil:
			a.logger.Warn("skipping a plugin directory; going on without its plugins", "dir", d, "error", err)
			continue
		}
		if !slices.ContainsFunc(entries, isExecutableFile) {
			a.logger.Debug("skipping a plugin directory without executable files", "dir", d)
			continue
		}
		out = append(out, d)
	}
	return out
}

func isExecutableFile(e fs.DirEntry) bool {
	if !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := e.Info()
	if err != nil {
		return false
	}
	if e.Type()&fs.ModeSymlink != 0 {
		return true // let the scan follow and judge it
	}
	return fi.Mode().Perm()&0o111 != 0
}
