// Command crashsoak is a randomized crash soak of the real `tributary`
// binary, for bench/crash/run.sh (it is not part of CI: it runs for
// minutes). Each scenario runs a pipeline with `tributary run`, drives load
// against it, kills it with SIGKILL at a random moment (0.2–3 s after the
// start, now and then a long round that lets the background cleaner run, and
// now and then a second kill during the restart's recovery), restarts it and
// checks after every round that nothing acknowledged was lost:
//
//	httptrack  Segment API clients with unique messageIds, retries and
//	           resends: every event answered 200 is in the topic exactly
//	           once, and no messageId is there twice
//	generator  generator → file sink: no seq at or below the stored source
//	           position missing from the topic (nor any after the final
//	           clean run), the position never ahead of the topic, every
//	           record below the sink group's committed offset in the file,
//	           the file without gaps
//	produce    `tributary produce` through the worker's REST API (killed with
//	           the worker) and straight on the data directory (killed
//	           itself): every line it counted as acknowledged is readable
//	           with `tributary consume`, in order, none skipped
//	postgres   (not in the default set) a throwaway PostgreSQL server with
//	           logical replication and a client inserting rows in id order
//	           all along: every committed row is in the topic after the
//	           final clean run (gaps after a round are listed and must close)
//	mysql      (not in the default set) a throwaway MariaDB server (binlog in
//	           ROW format, GTIDs) captured by a mysql source into a file
//	           sink, while a client commits inserts, updates and deletes of
//	           64 keys, multi-row transactions and XA transactions (XA
//	           PREPARE then XA COMMIT or XA ROLLBACK, at once, or later from
//	           another session, often after a worker kill; some ONE PHASE):
//	           every committed change (a unique row version) is in the file
//	           after the final clean run, per key first appearances in commit
//	           order, and no change of a rolled-back or undecided XA
//	           transaction ever; skipped when MariaDB is not installed
//
// In every scenario each start must come up (REST /health) and run its
// connectors without a FAILED task, and the CLI must open the data directory
// after every kill, with no "corrupt" refusal.
//
// Random choices come from -seed (printed at the start): the kill delays,
// the kinds of rounds and the clients' requests replay with the same seed,
// though the moment a kill hits still depends on the machine's timing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin       string
	work      string
	seed      uint64
	duration  time.Duration
	rounds    int
	scenarios []string
	keep      bool
	longEvery float64
	verbose   bool
	noDedup   bool
}

func main() {
	var o options
	var scen string
	flag.StringVar(&o.bin, "bin", "", "the tributary binary to soak (run.sh builds it)")
	flag.StringVar(&o.work, "work", "", "work directory (default: a new temp dir, removed at the end unless -keep or a violation)")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock; printed at the start)")
	flag.DurationVar(&o.duration, "duration", time.Minute, "how long each scenario's kill loop runs")
	flag.IntVar(&o.rounds, "rounds", 0, "stop each scenario after this many rounds (0: by -duration only)")
	flag.StringVar(&scen, "scenarios", "httptrack,generator,produce", "scenarios to run, comma-separated")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory")
	flag.Float64Var(&o.longEvery, "long", 0.08, "share of rounds that last 16–20 s, so that the log's cleaner (every 15 s) runs before the kill")
	flag.BoolVar(&o.verbose, "v", false, "print the worker's ERROR lines as they are found")
	flag.BoolVar(&o.noDedup, "control-no-dedup", false, "control run: httptrack with dedup.window 0, so retries of durable requests are stored twice and the soak must report duplicates")
	flag.Parse()
	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "crashsoak: -bin is required: the tributary binary to soak (bench/crash/run.sh builds one)")
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	o.scenarios = strings.Split(scen, ",")
	for _, s := range o.scenarios {
		if _, ok := scenarios[s]; !ok {
			fmt.Fprintf(os.Stderr, "crashsoak: unknown scenario %q: choose from httptrack, generator, produce, postgres, mysql\n", s)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, o))
}

// scenarios maps a name to its constructor.
var scenarios = map[string]func(s *soak) scenario{
	"httptrack": newHTTPTrack,
	"generator": newGenerator,
	"produce":   newProduce,
	"postgres":  newPostgres,
	"mysql":     newMysql,
}

func run(ctx context.Context, o options) int {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashsoak:", err)
		return 1
	}
	o.bin = bin
	removeWork := false
	if o.work == "" {
		o.work, err = os.MkdirTemp("", "crashsoak-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "crashsoak: make the work directory:", err)
			return 1
		}
		removeWork = !o.keep
	}
	fmt.Printf("crashsoak: seed %d, work dir %s, %v per scenario, scenarios %s\n",
		o.seed, o.work, o.duration, strings.Join(o.scenarios, ","))
	var sums []*summary
	failed := false
	for i, name := range o.scenarios {
		if ctx.Err() != nil {
			break
		}
		s := newSoak(o, name, o.seed+uint64(i)*1_000_003)
		sum := s.run(ctx, scenarios[name](s))
		sums = append(sums, sum)
		if len(sum.violations) > 0 || sum.err != nil {
			failed = true
		}
	}
	fmt.Println("\n== summary (seed", o.seed, ")")
	for _, sum := range sums {
		sum.print()
	}
	if failed {
		fmt.Printf("crashsoak: VIOLATIONS or errors; the work dir %s is kept (worker logs in */worker.log); replay with -seed %d\n", o.work, o.seed)
		return 1
	}
	if removeWork {
		os.RemoveAll(o.work)
	}
	fmt.Println("crashsoak: no violations")
	return 0
}
