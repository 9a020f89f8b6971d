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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The log start crash test kills, with SIGKILL, a child that appends and
// deletes records (DeleteRecords) in a loop, while retention deletes the
// segments below the log start.
const (
	startCrashChildEnv = "TRIBUTARY_START_CRASH_CHILD" // data dir: run as the child
	startCrashSeedEnv  = "TRIBUTARY_START_CRASH_SEED"  // replay a failed run
	startCrashTopic    = "dr"
	startCrashRounds   = 8
)

// TestCrash_SIGKILLDuringDeleteRecords: after each kill the log must open
// with a log start offset at or past every one DeleteRecords acknowledged
// to the child, and at most its end; reads below it fail, reads from it
// find every record up to the end (the record at offset n holds n), and
// the log takes an append at its end.
func TestCrash_SIGKILLDuringDeleteRecords(t *testing.T) {
	if dir := os.Getenv(startCrashChildEnv); dir != "" {
		startCrashChild(dir)
		return
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(startCrashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", startCrashSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, startCrashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic(startCrashTopic, 1, map[string]string{ConfigSegmentBytes: "4096", ConfigRetentionMs: "-1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var acked int
	var lastStart int64
	for round := range startCrashRounds {
		delay := time.Duration(10+rng.IntN(150)) * time.Millisecond
		maxAck, n := runStartCrashChild(t, dir, delay)
		acked += n

		l := openTestLog(t, dir)
		start, end, err := l.Offsets(startCrashTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if start < maxAck || start < lastStart || start > end {
			t.Fatalf("round %d: log start %d after the kill (log end %d); the child saw %d acknowledged, the last round ended at %d (seed %d)",
				round, start, end, maxAck, lastStart, seed)
		}
		if start > 0 {
			if _, err := l.Read(t.Context(), startCrashTopic, 0, start-1, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("round %d: Read(%d) below the log start %d: %v, want ErrOffsetOutOfRange", round, start-1, start, err)
			}
		}
		for _, r := range readAll(t, l, startCrashTopic, 0, start) {
			if string(r.Value) != strconv.FormatInt(r.Offset, 10) {
				t.Fatalf("round %d: record at %d holds %q", round, r.Offset, r.Value)
			}
		}
		if base, err := l.Append(t.Context(), startCrashTopic, 0, []Record{{Value: []byte(strconv.FormatInt(end, 10))}}); err != nil || base != end {
			t.Fatalf("round %d: Append after the kill = %d, %v; want %d", round, base, err, end)
		}
		bases, _ := segmentFiles(t, dir, startCrashTopic, 0)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %v; %d deletions acknowledged, highest %d; log [%d, %d), %d segments", round, delay, n, maxAck, start, end, len(bases))
		lastStart = start
	}
	if acked == 0 {
		t.Fatal("no round saw an acknowledged deletion: the kills came too early to test anything")
	}
}

// runStartCrashChild starts a child on dir, kills it with SIGKILL delay
// after it opened the log and returns the highest log start offset it saw
// DeleteRecords acknowledge (-1 if none) and how many it saw.
func runStartCrashChild(t *testing.T, dir string, delay time.Duration) (maxAck int64, n int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash_SIGKILLDuringDeleteRecords$", "-test.count=1")
	cmd.Env = append(os.Environ(), startCrashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe() // the child exits when it closes
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	maxAck = -1
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, num, _ := strings.Cut(sc.Text(), " ")
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				continue
			}
			switch word {
			case "ready":
				close(ready)
			case "ack":
				maxAck = max(maxAck, v)
				n++
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("child did not open the log within 30s")
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
	return maxAck, n
}

// startCrashChild is the child's side: append numbered records, delete
// some of them, run retention, and say each acknowledged log start, until
// killed.
func startCrashChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "start crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the parent is gone
	}()
	time.AfterFunc(time.Minute, func() { fail("not killed within a minute") })
	l, err := Open(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fail("open: %v", err)
	}
	fmt.Println("ready 0")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	ctx := context.Background()
	for i := 0; ; i++ {
		_, end, err := l.Offsets(startCrashTopic, 0)
		if err != nil {
			fail("offsets: %v", err)
		}
		recs := make([]Record, 1+rng.IntN(20))
		for j := range recs {
			recs[j].Value = []byte(strconv.FormatInt(end+int64(j), 10))
		}
		if _, err := l.Append(ctx, startCrashTopic, 0, recs); err != nil {
			fail("append: %v", err)
		}
		if i%3 != 0 {
			continue
		}
		// A quarter of the way to the end at most, so the log keeps
		// several segments for retention to delete.
		start, end, _ := l.Offsets(startCrashTopic, 0)
		low, err := l.DeleteRecords(startCrashTopic, 0, start+rng.Int64N((end-start)/4+1))
		if err != nil {
			fail("delete records: %v", err)
		}
		fmt.Printf("ack %d\n", low)
		if i%2 == 0 {
			l.EnforceRetention()
		}
	}
}
