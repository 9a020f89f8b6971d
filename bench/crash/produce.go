package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const plogTopic = "plog"

// produceScen appends lines with `tributary produce` to one partition of
// plog while a generator keeps the worker's log busy:
//
//   - through the worker's REST API (--server), until the kill of the
//     worker cuts it: produce then fails and prints how many records were
//     acknowledged, which with one partition are the first N lines;
//   - between rounds, straight on the data directory, killed itself at a
//     random moment or left to finish (exit 0: every line acknowledged).
//
// Invariant (c): every line counted as acknowledged is read back with
// `tributary consume`, and each run's lines come in order with none
// skipped (a kill may only cut a run's tail).
type produceScen struct {
	s   *soak
	rng *rand.Rand // the sizes of the runs through the worker

	mu     sync.Mutex
	runs   []*produceRun
	cancel context.CancelFunc
	wg     sync.WaitGroup

	next int64          // plog offset read so far
	seen map[int]int    // run → lines read so far (in order)
	dups map[string]int // lines read twice
}

type produceRun struct {
	id     int
	round  int
	how    string // "server" or "direct"
	sent   int    // lines written to its stdin
	acked  int    // lines it counted as acknowledged
	status string
}

func newProduce(s *soak) scenario {
	return &produceScen{s: s, rng: rand.New(rand.NewPCG(s.seed, 17)), seen: map[int]int{}, dups: map[string]int{}}
}

func (ps *produceScen) pipeline() string {
	return fmt.Sprintf(`version: 1
name: soak-produce
log: {backend: embedded, dir: %s}
topics:
  - {name: bg, partitions: 2, config: {segment.bytes: 1048576}}
  - {name: %s, partitions: 1, config: {segment.bytes: 131072}}
sources:
  - name: bg
    connector: generator
    topic: bg
    config: {rate: 2000, seed: 1, batch.size: 100}
`, ps.s.dataDir, plogTopic)
}

func (ps *produceScen) newRun(round int, how string) *produceRun {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r := &produceRun{id: len(ps.runs), round: round, how: how}
	ps.runs = append(ps.runs, r)
	return r
}

// startLoad runs `produce --server` runs one after the other until
// stopLoad (a run ends when the kill cuts it, or when it has sent its
// lines).
func (ps *produceScen) startLoad(ctx context.Context, round int) {
	ctx, ps.cancel = context.WithCancel(ctx)
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		for ctx.Err() == nil {
			r := ps.newRun(round, "server")
			n := 2000 + ps.rng.IntN(50000)
			ps.produce(ctx, r, n, []string{"--server", ps.s.restAddr}, 0)
			if r.acked == 0 {
				select { // the worker is starting, or dead
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}()
}

func (ps *produceScen) stopLoad() {
	ps.cancel()
	ps.wg.Wait()
}

// between runs one produce straight on the data directory, killed after a
// random 30–730 ms (60% of the time) or left to finish.
func (ps *produceScen) between(ctx context.Context, round int) {
	r := ps.newRun(round, "direct")
	n := 500 + ps.s.rng.IntN(200000)
	var killAfter time.Duration
	if ps.s.rng.Float64() < 0.6 {
		killAfter = 30*time.Millisecond + time.Duration(ps.s.rng.Int64N(int64(700*time.Millisecond)))
	}
	ps.produce(ctx, r, n, []string{"--data-dir", ps.s.dataDir}, killAfter)
	if strings.Contains(strings.ToLower(r.status), "corrupt") {
		ps.s.violate(round, "(d) produce --data-dir after the kill: %s", r.status)
	}
}

var ackedRe = regexp.MustCompile(`% (\d+) records acknowledged to `)

// produce runs one `tributary produce plog -p 0` writing n lines
// "p<run>-<i>" (i from 1) to its stdin, a chunk at a time, and records how
// many it acknowledged. With killAfter > 0 it is killed then.
func (ps *produceScen) produce(ctx context.Context, r *produceRun, n int, extra []string, killAfter time.Duration) {
	args := append([]string{"produce", plogTopic, "-p", "0", "--append-bytes", "65536"}, extra...)
	cmd := exec.Command(ps.s.o.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.status = err.Error()
		return
	}
	if err := cmd.Start(); err != nil {
		r.status = err.Error()
		return
	}
	done := make(chan error, 1)
	go func() {
		// A line is ~70 bytes: 64 KiB appends, 128 KiB segments.
		w := bufio.NewWriterSize(stdin, 64<<10)
		pad := strings.Repeat("z", 50)
		for i := 1; i <= n && ctx.Err() == nil; i++ {
			if _, err := fmt.Fprintf(w, "p%d-%d %s\n", r.id, i, pad); err != nil {
				break
			}
			r.sent = i
			if i%500 == 0 {
				if w.Flush() != nil {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		w.Flush()
		stdin.Close()
	}()
	go func() { done <- cmd.Wait() }()
	var timer <-chan time.Time
	if killAfter > 0 {
		timer = time.After(killAfter)
	}
	killed := false
	select {
	case err = <-done:
	case <-timer:
		cmd.Process.Signal(syscall.SIGKILL)
		err = <-done
		killed = true
	case <-ctx.Done():
		// The worker was killed: produce fails on its own; give it time
		// to say what it acknowledged.
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			err = <-done
			ps.s.violate(r.round, "(c) produce --server did not end within 30 s of the worker's kill\n%s", tail(stderr.String(), 10))
		}
	}
	out := stderr.String()
	m := ackedRe.FindStringSubmatch(out)
	var ee *exec.ExitError
	switch {
	case killed && errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		r.status = "killed"
		ps.s.mu.Lock()
		ps.s.sum.cliKills++
		ps.s.mu.Unlock()
	case m == nil:
		r.status = fmt.Sprintf("%v, no count printed: %s", err, firstLines(out, 3))
		// The count is printed "also after an error", but not when the
		// error comes before the producer starts (the topic lookup): then
		// nothing was appended.
		if !strings.Contains(out, "connection refused") && !strings.Contains(out, "connect:") {
			ps.s.note("produce " + r.how + " ended without printing the count: " + errorClass(out))
		}
	default:
		r.acked, _ = strconv.Atoi(m[1])
		r.status = fmt.Sprintf("%v", err)
		if err == nil && r.acked != r.sent {
			ps.s.violate(r.round, "(c) produce run %d exited 0 after %d lines but counted %d acknowledged", r.id, r.sent, r.acked)
		}
		if err != nil {
			ps.s.note("produce " + r.how + " failed: " + errorClass(out))
		}
	}
}

// errorClass shortens an error output to its kind, to count them.
func errorClass(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "%") {
			if len(l) > 90 {
				l = l[:90]
			}
			return l
		}
	}
	return "?"
}

func (ps *produceScen) finish(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
}

func (ps *produceScen) check(ctx context.Context, round int) int {
	if !ps.s.hasTopic(ctx, plogTopic) {
		return 0
	}
	err := ps.s.consume(ctx, plogTopic, 0, ps.next, func(off int64, v []byte) {
		ps.next = off + 1
		word, _, _ := bytes.Cut(v, []byte{' '})
		var run, i int
		if _, err := fmt.Sscanf(string(word), "p%d-%d", &run, &i); err != nil {
			ps.s.violate(round, "(c) %s offset %d: not a line of the soak: %.100q", plogTopic, off, v)
			return
		}
		switch seen := ps.seen[run]; {
		case i == seen+1:
			ps.seen[run] = i
		case i <= seen:
			ps.dups[string(word)]++
			ps.s.note("a produce line read twice")
		default:
			ps.s.violate(round, "(c) %s offset %d: line %d of produce run %d follows its line %d: lines %d..%d skipped",
				plogTopic, off, i, run, seen, seen+1, i-1)
			ps.seen[run] = i
		}
	})
	if err != nil {
		ps.s.violate(round, "(c) read %s from offset %d: %v", plogTopic, ps.next, err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	acked, runs := 0, 0
	for _, r := range ps.runs {
		if r.round != round {
			continue
		}
		runs++
		acked += r.acked
		if got := ps.seen[r.id]; got < r.acked {
			ps.s.violate(round, "(c) produce run %d (%s, %s) acknowledged %d lines, but only its lines 1..%d are in %s: lines %d..%d lost",
				r.id, r.how, r.status, r.acked, got, plogTopic, got+1, r.acked)
		}
	}
	total := 0
	for _, r := range ps.runs {
		total += r.acked
	}
	fmt.Printf("    produce: this round %d runs acknowledged %d lines; %d acknowledged in all; %s read to offset %d\n",
		runs, acked, total, plogTopic, ps.next)
	return total
}
