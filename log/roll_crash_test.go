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

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// The roll crash test kills, with SIGKILL, a child that appends to
// partitions whose segments are a few KiB (so it rolls all the time) while
// retention deletes their old segments and the cleaner compacts them.
const (
	rollCrashChildEnv     = "TRIBUTARY_ROLL_CRASH_CHILD" // data dir: run as the child
	rollCrashChildSeedEnv = "TRIBUTARY_ROLL_CRASH_CHILD_SEED"
	rollCrashSeedEnv      = "TRIBUTARY_ROLL_CRASH_SEED"   // replay a failed run
	rollCrashRoundsEnv    = "TRIBUTARY_ROLL_CRASH_ROUNDS" // more rounds, for a soak
	rollCrashDelete       = "rcdel"                       // retention by time and size
	rollCrashCompact      = "rckv"                        // compacted, keys cycling
	rollCrashKeys         = 13
	rollCrashSegBytes     = 2048
)

// rollCrashKey is the key of the record numbered n in the compacted topic.
func rollCrashKey(n int64) []byte { return fmt.Appendf(nil, "k%d", n%rollCrashKeys) }

// TestCrash_SIGKILLDuringRolls kills a child that appends idempotent
// batches of numbered records (the record at offset n holds n) to two
// partitions that roll every few appends: one whose old segments retention
// deletes (by time and size), one that the cleaner compacts. Kills land at
// random moments, so some of them interrupt a roll between its creates and
// its producer snapshot, which recovery must clean up (removeRollLeftovers).
// After each kill the log must open, and for each partition: it ends at or
// past every acknowledged record; every record holds its offset; the
// retention partition holds every offset from its start to its end; the
// compacted one holds, for each key, the newest record of that key; the
// retry of the child's last acknowledged batch is recognized as a
// duplicate (the producer state survived), and the log takes an append at
// its end.
func TestCrash_SIGKILLDuringRolls(t *testing.T) {
	if dir := os.Getenv(rollCrashChildEnv); dir != "" {
		rollCrashChild(dir)
		return
	}
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	if s := os.Getenv(rollCrashRoundsEnv); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", rollCrashRoundsEnv, s, err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(rollCrashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", rollCrashSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, rollCrashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	dir := t.TempDir()
	l := openTestLog(t, dir)
	seg := strconv.Itoa(rollCrashSegBytes)
	if err := l.CreateTopic(rollCrashDelete, 1, map[string]string{
		ConfigSegmentBytes: seg, ConfigRetentionMs: "300", ConfigRetentionBytes: strconv.Itoa(16 * rollCrashSegBytes),
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic(rollCrashCompact, 1, map[string]string{
		ConfigSegmentBytes: seg, ConfigCleanupPolicy: "compact", ConfigMinCleanableRatio: "0.01",
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	topics := []string{rollCrashDelete, rollCrashCompact}
	next := map[string]int64{} // the end each partition must at least have
	var acked, removals, truncations int64
	for round := range rounds {
		delay := time.Duration(5+rng.IntN(200)) * time.Millisecond
		res := runRollCrashChild(t, dir, seed+uint64(round), delay)

		var logged syncbuf.Buffer
		l := openTestLog(t, dir, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			o.RetentionCheckInterval, o.CleanerInterval = time.Hour, time.Hour
		})
		for _, topic := range topics {
			ack := res.acks[topic]
			start, end, err := l.Offsets(topic, 0)
			if err != nil {
				t.Fatal(err)
			}
			if end < next[topic] || end <= ack.last {
				t.Fatalf("round %d: %s ends at %d after the kill; it held %d before and the child saw %d acknowledged (seed %d)\n%s",
					round, topic, end, next[topic], ack.last, seed, logged.String())
			}
			recs := readAll(t, l, topic, 0, start)
			checkRollCrashRecords(t, topic, recs, start, end)
			if ack.last >= 0 {
				// The producer state survived: the retry of the last
				// acknowledged batch is a duplicate.
				n := ack.last - ack.first + 1
				retry := make([]Record, n)
				for i := range retry {
					num := ack.first + int64(i)
					retry[i] = Record{Value: []byte(strconv.FormatInt(num, 10))}
					if topic == rollCrashCompact {
						retry[i].Key = rollCrashKey(num)
					}
				}
				base, err := l.AppendIdempotent(t.Context(), topic, 0, retry, ProducerInfo{ID: res.pid, Epoch: res.epoch, Sequence: ack.seq})
				if err != nil || base != ack.first {
					t.Fatalf("round %d: %s: retry of the acknowledged batch %d..%d = %d, %v; want %d, nil (a duplicate) (seed %d)",
						round, topic, ack.first, ack.last, base, err, ack.first, seed)
				}
				acked += max(0, ack.last+1-next[topic])
			}
			rec := Record{Value: []byte(strconv.FormatInt(end, 10))}
			if topic == rollCrashCompact {
				rec.Key = rollCrashKey(end)
			}
			if base, err := l.Append(t.Context(), topic, 0, []Record{rec}); err != nil || base != end {
				t.Fatalf("round %d: %s: Append after the kill = %d, %v; want %d, nil", round, topic, base, err, end)
			}
			next[topic] = end + 1
		}
		m := l.Metrics()
		truncations += m.TailTruncations.Load()
		if n := m.CorruptBatches.Load(); n != 0 {
			t.Fatalf("round %d: recovery found %d corrupt batches (seed %d)\n%s", round, n, seed, logged.String())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logged.String(), "did not complete") {
			removals++
		}
		t.Logf("round %d: killed %v after the first append; log ends %v", round, delay, next)
	}
	if acked == 0 {
		t.Fatal("no round saw an acknowledged append: the kills came too early to test anything")
	}
	t.Logf("%d rounds, %d records acknowledged, %d opens removed what an unfinished roll left, %d torn tails truncated", rounds, acked, removals, truncations)
}

// checkRollCrashRecords checks the records of a partition of the roll
// crash test, read from its start offset to its end: each holds its offset;
// the retention partition has no gap; the compacted one keeps the newest
// record of every key.
func checkRollCrashRecords(t *testing.T, topic string, recs []Record, start, end int64) {
	t.Helper()
	newest := map[string]int64{}
	prev := start - 1
	for _, r := range recs {
		if string(r.Value) != strconv.FormatInt(r.Offset, 10) || r.Offset <= prev || r.Offset >= end {
			t.Fatalf("%s: record at offset %d holds %q (the one before at %d, end %d)", topic, r.Offset, r.Value, prev, end)
		}
		if topic == rollCrashDelete && r.Offset != prev+1 {
			t.Fatalf("%s: offsets %d..%d are missing (start %d, end %d)", topic, prev+1, r.Offset-1, start, end)
		}
		if topic == rollCrashCompact {
			if want := rollCrashKey(r.Offset); !bytes.Equal(r.Key, want) {
				t.Fatalf("%s: record at offset %d has key %q, want %q", topic, r.Offset, r.Key, want)
			}
			newest[string(r.Key)] = r.Offset
		}
		prev = r.Offset
	}
	if topic == rollCrashDelete && prev != end-1 {
		t.Fatalf("%s: records end at %d, the log at %d", topic, prev+1, end)
	}
	if topic == rollCrashCompact {
		for o := max(start, end-rollCrashKeys); o < end; o++ {
			if k := string(rollCrashKey(o)); newest[k] != o {
				t.Fatalf("%s: the newest record of key %s is at %d, but the log has it at %d", topic, k, o, newest[k])
			}
		}
	}
}

// rollCrashAck is the last batch a child saw acknowledged in a partition.
type rollCrashAck struct {
	first, last int64 // numbers (and offsets); last -1 if none
	seq         int32
}

type rollCrashResult struct {
	pid   int64
	epoch int16
	acks  map[string]rollCrashAck
}

// runRollCrashChild starts a child on dir and kills it with SIGKILL delay
// after its first append.
func runRollCrashChild(t *testing.T, dir string, seed uint64, delay time.Duration) rollCrashResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash_SIGKILLDuringRolls$", "-test.count=1")
	cmd.Env = append(os.Environ(), rollCrashChildEnv+"="+dir, rollCrashChildSeedEnv+"="+strconv.FormatUint(seed, 10))
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
	res := rollCrashResult{acks: map[string]rollCrashAck{
		rollCrashDelete: {last: -1}, rollCrashCompact: {last: -1},
	}}
	readyCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "ready":
				res.pid, _ = strconv.ParseInt(f[1], 10, 64)
				epoch, _ := strconv.ParseInt(f[2], 10, 16)
				res.epoch = int16(epoch)
				close(readyCh)
			case len(f) == 5 && f[0] == "ack":
				var a rollCrashAck
				a.first, _ = strconv.ParseInt(f[2], 10, 64)
				a.last, _ = strconv.ParseInt(f[3], 10, 64)
				seq, _ := strconv.ParseInt(f[4], 10, 32)
				a.seq = int32(seq)
				if a.last > res.acks[f[1]].last {
					res.acks[f[1]] = a
				}
			}
		}
	}()
	select {
	case <-readyCh:
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
	return res
}

// rollCrashChild is the child's side: open the log with retention and the
// cleaner running all the time, and append numbered records to both
// partitions, two appenders each, until killed. Each appender takes the
// next range of numbers and appends it as one idempotent batch whose
// sequence is the range's start (from the end the partition had on open),
// retrying while an earlier range is not in yet, so the number of every
// record is its offset.
func rollCrashChild(dir string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "roll crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3) // the parent is gone
	}()
	time.AfterFunc(time.Minute, func() { fail("not killed within a minute") })
	seed, _ := strconv.ParseUint(os.Getenv(rollCrashChildSeedEnv), 10, 64)

	l, err := Open(Options{Dir: dir, Logger: slog.New(slog.DiscardHandler),
		RetentionCheckInterval: 3 * time.Millisecond, CleanerInterval: 3 * time.Millisecond})
	if err != nil {
		fail("open: %v", err)
	}
	id, epoch, err := l.InitProducerID()
	if err != nil {
		fail("init producer id: %v", err)
	}
	var out sync.Mutex
	ctx := context.Background()
	start := func(topic string, g int) {
		_, end, err := l.Offsets(topic, 0)
		if err != nil {
			fail("offsets of %s: %v", topic, err)
		}
		var mu sync.Mutex
		nextNum := end
		// The producer id is new to the partition, which takes its first
		// batch at any sequence (KIP-360): sequence 0 goes in first.
		firstIn := make(chan struct{})
		for a := range 2 {
			rng := rand.New(rand.NewPCG(seed, uint64(2*g+a)))
			go func() {
				for {
					n := 1 + rng.IntN(40)
					mu.Lock()
					first := nextNum
					nextNum += int64(n)
					mu.Unlock()
					recs := make([]Record, n)
					for i := range recs {
						num := first + int64(i)
						recs[i].Value = []byte(strconv.FormatInt(num, 10))
						if topic == rollCrashCompact {
							recs[i].Key = rollCrashKey(num)
						}
					}
					seq := int32(first - end)
					if seq != 0 {
						<-firstIn
					}
					for {
						base, err := l.AppendIdempotent(ctx, topic, 0, recs, ProducerInfo{ID: id, Epoch: epoch, Sequence: seq})
						if errors.Is(err, ErrOutOfOrderSequence) {
							runtime.Gosched() // an earlier range is not in yet
							continue
						}
						if err != nil {
							fail("append %s %d..%d: %v", topic, first, first+int64(n)-1, err)
						}
						if base != first {
							fail("append %s %d..%d went to offset %d", topic, first, first+int64(n)-1, base)
						}
						break
					}
					if seq == 0 {
						close(firstIn)
					}
					out.Lock()
					fmt.Printf("ack %s %d %d %d\n", topic, first, first+int64(n)-1, seq)
					out.Unlock()
				}
			}()
		}
	}
	out.Lock()
	start(rollCrashDelete, 0)
	start(rollCrashCompact, 1)
	fmt.Printf("ready %d %d\n", id, epoch)
	out.Unlock()
	select {}
}
