package log

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The crash test re-executes the test binary as a child that appends
// numbered records and is killed with SIGKILL; the parent then checks what
// survived. These variables name the child's environment.
const (
	crashChildEnv     = "TRIBUTARY_CRASH_CHILD"      // data dir: run as the child
	crashChildSeedEnv = "TRIBUTARY_CRASH_CHILD_SEED" // the child's batch sizes
	crashSeedEnv      = "TRIBUTARY_CRASH_SEED"       // replay a failed run
	crashTopic        = "crash"
	crashRounds       = 20
	crashAppenders    = 4
)

// TestCrash_SIGKILLDuringAppends kills a child that appends as fast as it can,
// crashRounds times in a row on the same data dir. The record at offset n
// holds the decimal number n. After each kill the partition must hold a
// gap-free, duplicate-free prefix 0..N-1 that includes every number the
// child saw acknowledged, and it must take new appends.
//
// The child runs crashAppenders goroutines, so group commit covers several
// appends per fsync. Each takes the next range of numbers and appends it as
// one idempotent batch whose sequence is the range's start: the log refuses
// a batch that would overtake an earlier range (out of order sequence) and
// the appender retries, so numbers reach the log in order and the number of
// every acknowledged record is its offset.
func TestCrash_SIGKILLDuringAppends(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic(crashTopic, 1, map[string]string{ConfigSegmentBytes: strconv.Itoa(64 << 10)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	var next int64 // records the partition must hold at least: all verified so far
	var acked, truncations int64
	for round := range crashRounds {
		// Most kills are timed from the child's first append; every fifth
		// from its start, so that some land while it recovers.
		fromStart := round%5 == 4
		delay := time.Duration(20+rng.IntN(281)) * time.Millisecond
		ready, maxAck := runCrashChild(t, dir, seed+uint64(round), delay, fromStart)
		if ready >= 0 && ready != next {
			t.Fatalf("round %d: child opened the log at end offset %d, want %d (the verified end after the last round)", round, ready, next)
		}

		l := openTestLog(t, dir)
		start, end, err := l.Offsets(crashTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if start != 0 {
			t.Fatalf("round %d: log start offset %d, want 0", round, start)
		}
		if end < next || end < maxAck+1 {
			t.Fatalf("round %d: log ends at %d after the kill; it held %d records before and the child saw %d acknowledged (seed %d)", round, end, next, maxAck, seed)
		}
		// Everything appended since the last round, and some before, holds
		// its own offset as its number.
		checkCrashRecords(t, l, max(0, next-500), end)
		base, err := l.Append(t.Context(), crashTopic, 0, []Record{{Value: []byte(strconv.FormatInt(end, 10))}})
		if err != nil || base != end {
			t.Fatalf("round %d: Append after the kill = %d, %v; want %d, nil", round, base, err, end)
		}
		truncations += l.Metrics().TailTruncations.Load()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		from := "its first append"
		if fromStart {
			from = "its start"
		}
		t.Logf("round %d: killed %v after %s; highest acknowledged %d, log end %d (%d records added)", round, delay, from, maxAck, end, end-next)
		if maxAck >= next {
			acked += maxAck + 1 - next
		}
		next = end + 1
	}
	if acked == 0 {
		t.Fatal("no round saw an acknowledged append: the kills came too early to test anything")
	}
	t.Logf("%d rounds, %d records acknowledged, %d records in the log, %d torn tails truncated", crashRounds, acked, next, truncations)

	l = openTestLog(t, dir)
	defer l.Close()
	checkCrashRecords(t, l, 0, next)
}

// checkCrashRecords reads offsets [from, end) and checks that each record
// holds its offset as a decimal number.
func checkCrashRecords(t *testing.T, l *Log, from, end int64) {
	t.Helper()
	want := from
	for want < end {
		res, err := l.Read(t.Context(), crashTopic, 0, want, ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			t.Fatalf("Read(%d): %v", want, err)
		}
		if len(res.Records) == 0 {
			t.Fatalf("Read(%d): no records, but the log ends at %d", want, end)
		}
		for _, r := range res.Records {
			if r.Offset != want || string(r.Value) != strconv.FormatInt(want, 10) {
				t.Fatalf("record at offset %d holds %q, want offset %d holding %d", r.Offset, r.Value, want, want)
			}
			want++
		}
	}
}

// runCrashChild starts a child on dir, kills it with SIGKILL delay after it
// starts appending (or after it starts, with fromStart) and returns the end
// offset the child found on open (-1 if it got no further) and the highest
// number it saw acknowledged (-1 if none).
func runCrashChild(t *testing.T, dir string, seed uint64, delay time.Duration, fromStart bool) (ready, maxAck int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash_SIGKILLDuringAppends$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildSeedEnv+"="+strconv.FormatUint(seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child exits when its stdin closes, so it never outlives the test.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	started := time.Now()
	ready, maxAck = -1, -1
	readyCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, num, _ := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				continue
			}
			switch word {
			case "ready":
				ready = n
				close(readyCh)
			case "ack":
				maxAck = max(maxAck, n)
			}
		}
	}()
	if !fromStart {
		select {
		case <-readyCh:
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("child did not open the log within 30s")
		}
	}
	if fromStart {
		delay -= time.Since(started)
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	<-done
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("child ended on its own before the kill: %v\n%s", err, stderr.String())
	}
	return ready, maxAck
}

// crashChild is the child's side: open the log, say where it ends, and
// append numbered records from there until killed.
func crashChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the parent is gone
	}()
	time.AfterFunc(time.Minute, func() { fail("not killed within a minute") })
	seed, _ := strconv.ParseUint(os.Getenv(crashChildSeedEnv), 10, 64)

	l, err := Open(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fail("open: %v", err)
	}
	_, end, err := l.Offsets(crashTopic, 0)
	if err != nil {
		fail("offsets: %v", err)
	}
	id, epoch, err := l.InitProducerID()
	if err != nil {
		fail("init producer id: %v", err)
	}
	var out sync.Mutex
	fmt.Printf("ready %d\n", end) // os.Stdout is unbuffered: every line goes out at once

	var mu sync.Mutex // hands out ranges of numbers
	nextNum := end
	// The producer id is new to the log, which takes its first batch at any
	// sequence (KIP-360): the range at sequence 0 goes in before the others.
	firstIn := make(chan struct{})
	ctx := context.Background()
	for g := range crashAppenders {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				n := 1 + rng.IntN(200)
				mu.Lock()
				first := nextNum
				nextNum += int64(n)
				mu.Unlock()
				recs := make([]Record, n)
				for i := range recs {
					recs[i].Value = []byte(strconv.FormatInt(first+int64(i), 10))
				}
				prod := ProducerInfo{ID: id, Epoch: epoch, Sequence: int32(first - end)}
				if first != end {
					<-firstIn
				}
				for {
					base, err := l.AppendIdempotent(ctx, crashTopic, 0, recs, prod)
					if errors.Is(err, ErrOutOfOrderSequence) {
						runtime.Gosched() // an earlier range is not in yet
						continue
					}
					if err != nil {
						fail("append %d..%d: %v", first, first+int64(n)-1, err)
					}
					if base != first {
						fail("append %d..%d went to offset %d", first, first+int64(n)-1, base)
					}
					break
				}
				if first == end {
					close(firstIn)
				}
				out.Lock()
				fmt.Printf("ack %d\n", first+int64(n)-1)
				out.Unlock()
			}
		}()
	}
	select {}
}
