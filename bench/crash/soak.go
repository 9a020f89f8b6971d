package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// scenario is one kind of load and its invariants. The soak calls
// pipeline once, then for every round startLoad after the worker started,
// stopLoad after it was killed, then check; finish once the kill loop is
// over, with the worker running cleanly (drain what is pending), and check
// again after the worker stopped.
type scenario interface {
	// pipeline returns the pipeline file's text.
	pipeline() string
	// startLoad starts the load on the running worker; it runs until
	// stopLoad.
	startLoad(ctx context.Context, round int)
	// stopLoad stops the load and waits for it (the worker is dead).
	stopLoad()
	// between runs while no worker runs, after stopLoad and before
	// check (e.g. a CLI write straight to the data directory).
	between(ctx context.Context, round int)
	// finish runs on the last, clean start once the kill loop is over.
	finish(ctx context.Context)
	// check checks the invariants on the data directory while no worker
	// runs; it reports violations with s.violate and returns how many
	// events it checked.
	check(ctx context.Context, round int) int
}

// soak runs one scenario's kill loop.
type soak struct {
	o        options
	name     string
	dir      string // the scenario's own directory
	dataDir  string
	restAddr string
	rng      *rand.Rand
	seed     uint64
	logf     *os.File // worker.log: every start's stderr

	mu  sync.Mutex
	sum *summary
}

func newSoak(o options, name string, seed uint64) *soak {
	dir := filepath.Join(o.work, name)
	return &soak{
		o: o, name: name, dir: dir, dataDir: filepath.Join(dir, "data"),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed,
		sum: &summary{name: name},
	}
}

// summary is a scenario's tally.
type summary struct {
	name       string
	rounds     int
	kills      int
	cliKills   int
	healthy    int // starts that reached /health before their kill
	checked    int // events checked in the last check (cumulative state)
	errorLines int // level=ERROR lines the worker logged
	violations []string
	notes      map[string]int
	err        error
	skip       string // why the scenario did not run (not a failure: e.g. no MariaDB installed)
}

func (s *summary) print() {
	if s.skip != "" {
		fmt.Printf("%-10s skipped: %s\n", s.name, s.skip)
		return
	}
	status := "ok"
	if len(s.violations) > 0 {
		status = fmt.Sprintf("%d VIOLATIONS", len(s.violations))
	}
	if s.err != nil {
		status += ", error: " + s.err.Error()
	}
	fmt.Printf("%-10s rounds %d, worker kills %d (%d reached /health first), CLI kills %d, events checked %d, worker ERROR lines %d: %s\n",
		s.name, s.rounds, s.kills, s.healthy, s.cliKills, s.checked, s.errorLines, status)
	for k, n := range s.notes {
		fmt.Printf("    note: %s (%d×)\n", k, n)
	}
	for i, v := range s.violations {
		if i == 30 {
			fmt.Printf("    … and %d more (see the output above)\n", len(s.violations)-i)
			break
		}
		fmt.Printf("    VIOLATION %s\n", v)
	}
}

// violate records a broken invariant.
func (s *soak) violate(round int, format string, args ...any) {
	msg := fmt.Sprintf("[%s round %d] ", s.name, round) + fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.sum.violations = append(s.sum.violations, msg)
	s.mu.Unlock()
	fmt.Println("  VIOLATION", msg)
}

// note counts something worth knowing that breaks no invariant.
func (s *soak) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sum.notes == nil {
		s.sum.notes = map[string]int{}
	}
	s.sum.notes[what]++
}

// closer is a scenario with something to stop at the end (a database).
type closer interface{ close() }

func (s *soak) run(ctx context.Context, sc scenario) *summary {
	fmt.Printf("\n== %s (seed %d)\n", s.name, s.seed)
	if c, ok := sc.(closer); ok {
		defer c.close()
	}
	if s.sum.skip != "" {
		fmt.Printf("[%s] skipped: %s\n", s.name, s.sum.skip)
		return s.sum
	}
	if s.sum.err != nil {
		return s.sum
	}
	if err := s.setup(sc); err != nil {
		s.sum.err = err
		return s.sum
	}
	defer s.logf.Close()
	end := time.Now().Add(s.o.duration)
	for round := 1; ctx.Err() == nil && time.Now().Before(end) && (s.o.rounds == 0 || round <= s.o.rounds); round++ {
		if err := s.round(ctx, sc, round); err != nil {
			s.sum.err = err
			return s.sum
		}
	}
	if ctx.Err() == nil {
		s.final(ctx, sc)
	}
	return s.sum
}

func (s *soak) setup(sc scenario) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", s.dir, err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.restAddr = fmt.Sprintf("127.0.0.1:%d", port)
	if err := os.WriteFile(filepath.Join(s.dir, "pipeline.yaml"), []byte(sc.pipeline()), 0o644); err != nil {
		return fmt.Errorf("write the pipeline: %w", err)
	}
	s.logf, err = os.OpenFile(filepath.Join(s.dir, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open the worker log: %w", err)
	}
	return nil
}

// killPlan is how one round ends.
type killPlan struct {
	after  time.Duration // from the start to the kill
	double time.Duration // >0: restart and kill again this long after the restart
	long   bool
}

func (s *soak) plan() killPlan {
	p := killPlan{after: 200*time.Millisecond + time.Duration(s.rng.Int64N(int64(2800*time.Millisecond)))}
	if s.rng.Float64() < s.o.longEvery {
		p.long = true
		p.after = 16*time.Second + time.Duration(s.rng.Int64N(int64(4*time.Second)))
	}
	if s.rng.Float64() < 0.15 {
		p.double = 20*time.Millisecond + time.Duration(s.rng.Int64N(int64(500*time.Millisecond)))
	}
	return p
}

func (s *soak) round(ctx context.Context, sc scenario, round int) error {
	p := s.plan()
	t0 := time.Now()
	var desc []string
	if p.double > 0 {
		// First a kill during the start (recovery of the previous kill),
		// then the ordinary one.
		w, err := s.start(round)
		if err != nil {
			return err
		}
		sc.startLoad(ctx, round)
		h := w.runFor(ctx, s, round, p.double)
		sc.stopLoad()
		desc = append(desc, fmt.Sprintf("kill at %v (%s)", p.double.Round(time.Millisecond), h))
	}
	w, err := s.start(round)
	if err != nil {
		return err
	}
	sc.startLoad(ctx, round)
	h := w.runFor(ctx, s, round, p.after)
	sc.stopLoad()
	kind := ""
	if p.long {
		kind = " long"
	}
	desc = append(desc, fmt.Sprintf("kill%s at %v (%s)", kind, p.after.Round(time.Millisecond), h))
	sc.between(ctx, round)
	n := s.verifyOpen(ctx, round)
	n += sc.check(ctx, round)
	s.mu.Lock()
	s.sum.rounds++
	s.sum.checked = n
	viol := len(s.sum.violations)
	s.mu.Unlock()
	fmt.Printf("[%s] round %d: %s; checked %d events; %d violations so far (%v)\n",
		s.name, round, strings.Join(desc, ", then "), n, viol, time.Since(t0).Round(time.Millisecond))
	return nil
}

// verifyOpen checks that the CLI opens the data directory after the kill
// (topics describe reads every partition's metadata).
func (s *soak) verifyOpen(ctx context.Context, round int) int {
	if _, err := os.Stat(filepath.Join(s.dataDir, "meta.json")); err != nil {
		return 0 // killed before the log was created
	}
	out, err := s.cli(ctx, nil, "topics", "describe")
	if err != nil {
		s.violate(round, "(d) `tributary topics describe --data-dir %s` after the kill: %v\n%s", s.dataDir, err, out)
	}
	return 0
}

// final starts the worker once more without a kill, lets the scenario
// finish its pending work, stops it with SIGTERM and checks a last time.
func (s *soak) final(ctx context.Context, sc scenario) {
	const round = 0
	fmt.Printf("[%s] final: clean start, drain, SIGTERM\n", s.name)
	w, err := s.start(round)
	if err != nil {
		s.sum.err = err
		return
	}
	if !w.waitHealthy(ctx, 60*time.Second) {
		s.violate(round, "(d) the final start did not reach /health within 60 s\n%s", tail(w.stderr.String(), 30))
	}
	sc.startLoad(ctx, round)
	sc.finish(ctx)
	w.checkStatus(s, round)
	sc.stopLoad()
	if err := w.term(30 * time.Second); err != nil {
		s.violate(round, "(d) SIGTERM: %v\n%s", err, tail(w.stderr.String(), 30))
	}
	s.scanLog(w, round)
	n := s.verifyOpen(ctx, round)
	n += sc.check(ctx, round)
	s.sum.checked = n
	fmt.Printf("[%s] final check: %d events checked\n", s.name, n)
}

// worker is one run of `tributary run`.
type worker struct {
	s      *soak
	cmd    *exec.Cmd
	stderr syncbuf.Buffer
	exited chan struct{}
	err    error // set when exited is closed
	start  time.Time
}

func (s *soak) start(round int) (*worker, error) {
	w := &worker{s: s, exited: make(chan struct{}), start: time.Now()}
	w.cmd = exec.Command(s.o.bin, "run", filepath.Join(s.dir, "pipeline.yaml"),
		"--rest-addr", s.restAddr, "--log-level", "info", "--drain-timeout", "20s")
	w.cmd.Env = append(os.Environ(), "TRIBUTARY_DATA_DIR="+s.dataDir)
	w.cmd.Dir = s.dir
	w.cmd.Stderr = &w.stderr
	w.cmd.Stdout = &w.stderr
	fmt.Fprintf(s.logf, "\n==== round %d: start at %s\n", round, w.start.UTC().Format(time.RFC3339Nano))
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s run: %w", s.o.bin, err)
	}
	go func() {
		w.err = w.cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// runFor lets the worker run for d and kills it; it checks the worker did
// not exit on its own and, once it is up, that no task FAILED. It says how
// far the start got.
func (w *worker) runFor(ctx context.Context, s *soak, round int, d time.Duration) string {
	deadline := w.start.Add(d)
	healthyAt := time.Duration(-1)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-w.exited:
			s.violate(round, "(d) the worker exited on its own %v after its start: %v\n%s",
				time.Since(w.start).Round(time.Millisecond), w.err, tail(w.stderr.String(), 30))
			s.scanLog(w, round)
			return "exited"
		case <-time.After(min(50*time.Millisecond, time.Until(deadline))):
		}
		if healthyAt < 0 && w.healthy() {
			healthyAt = time.Since(w.start)
		}
	}
	if healthyAt >= 0 {
		w.checkStatus(s, round)
	}
	w.kill(s, round)
	s.scanLog(w, round)
	if healthyAt < 0 {
		return "before /health"
	}
	s.mu.Lock()
	s.sum.healthy++
	s.mu.Unlock()
	return fmt.Sprintf("up after %v", healthyAt.Round(time.Millisecond))
}

func (w *worker) kill(s *soak, round int) {
	select {
	case <-w.exited:
		return
	default:
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.violate(round, "kill: %v", err)
	}
	<-w.exited
	var ee *exec.ExitError
	if !errors.As(w.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		s.violate(round, "(d) the worker ended with %v, not by SIGKILL\n%s", w.err, tail(w.stderr.String(), 30))
	}
	s.mu.Lock()
	s.sum.kills++
	s.mu.Unlock()
}

// term stops the worker with SIGTERM and wants exit status 0.
func (w *worker) term(timeout time.Duration) error {
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM: %w", err)
	}
	select {
	case <-w.exited:
		return w.err
	case <-time.After(timeout):
		w.cmd.Process.Kill()
		<-w.exited
		return fmt.Errorf("no exit within %v of SIGTERM (killed)", timeout)
	}
}

var httpc = &http.Client{Timeout: 2 * time.Second}

func (w *worker) healthy() bool {
	resp, err := httpc.Get("http://" + w.s.restAddr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (w *worker) waitHealthy(ctx context.Context, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if w.healthy() {
			return true
		}
		select {
		case <-w.exited:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// checkStatus wants no FAILED connector or task (d: nothing the user must
// fix by hand after a kill).
func (w *worker) checkStatus(s *soak, round int) {
	resp, err := httpc.Get("http://" + s.restAddr + "/connectors?expand=status")
	if err != nil {
		return // the worker may be slow; the kill comes anyway
	}
	defer resp.Body.Close()
	var st map[string]struct {
		Status struct {
			Connector struct {
				State string `json:"state"`
			} `json:"connector"`
			Tasks []struct {
				ID    int    `json:"id"`
				State string `json:"state"`
				Trace string `json:"trace"`
			} `json:"tasks"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return
	}
	for name, c := range st {
		if c.Status.Connector.State == "FAILED" {
			s.violate(round, "(d) connector %s is FAILED after a restart", name)
		}
		for _, t := range c.Status.Tasks {
			if t.State == "FAILED" {
				s.violate(round, "(d) task %s-%d is FAILED after a restart: %s", name, t.ID, firstLines(t.Trace, 5))
			}
		}
	}
}

// scanLog appends the worker's output to worker.log and looks through it:
// a "corrupt" line is a violation (d); ERROR lines are counted.
func (s *soak) scanLog(w *worker, round int) {
	out := w.stderr.String()
	s.logf.WriteString(out)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(strings.ToLower(line), "corrupt") {
			s.violate(round, "(d) the worker logged corruption: %s", line)
		}
		if strings.Contains(line, "level=ERROR") {
			s.mu.Lock()
			s.sum.errorLines++
			s.mu.Unlock()
			s.note("worker ERROR: " + errorKind(line))
			if s.o.verbose {
				fmt.Println("  worker:", line)
			}
		}
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "trunc") {
			s.note("worker WARN: " + errorKind(line))
		}
	}
}

// errorKind shortens a slog line to its message, to count lines by kind.
func errorKind(line string) string {
	if i := strings.Index(line, "msg="); i >= 0 {
		m := line[i+4:]
		if strings.HasPrefix(m, `"`) {
			if j := strings.Index(m[1:], `"`); j >= 0 {
				return m[1 : j+1]
			}
		}
		if j := strings.IndexByte(m, ' '); j >= 0 {
			return m[:j]
		}
		return m
	}
	return firstLines(line, 1)
}

// cli runs a tributary command on the data directory and returns its
// stdout (with stderr after it on error).
func (s *soak) cli(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.o.bin, append(args, "--data-dir", s.dataDir)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), fmt.Errorf("tributary %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// hasTopic reports whether the data directory has topic.
func (s *soak) hasTopic(ctx context.Context, topic string) bool {
	if _, err := os.Stat(filepath.Join(s.dataDir, "meta.json")); err != nil {
		return false
	}
	out, err := s.cli(ctx, nil, "topics", "list")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == topic {
			return true
		}
	}
	return false
}

// consume reads partition p of topic from offset from to its end and
// calls f with each record's offset and value.
func (s *soak) consume(ctx context.Context, topic string, p int, from int64, f func(off int64, value []byte)) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.o.bin, "consume", topic, "-p", fmt.Sprint(p), "-o", fmt.Sprint(from),
		"-e", "-q", "-f", `%o %s\n`, "--data-dir", s.dataDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start consume: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	var perr error
	for sc.Scan() {
		line := sc.Bytes()
		o, v, ok := bytes.Cut(line, []byte{' '})
		var off int64
		if _, err := fmt.Sscan(string(o), &off); !ok || err != nil {
			if perr == nil {
				perr = fmt.Errorf("consume %s [%d]: unparsable line %q", topic, p, line)
			}
			continue
		}
		f(off, v)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("tributary consume %s -p %d -o %d: %w\n%s", topic, p, from, err, stderr.String())
	}
	return perr
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    | " + strings.Join(lines, "\n    | ")
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}
