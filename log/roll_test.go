//go:build linux

package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The roll test lowers the child's open files limit (RLIMIT_NOFILE is
// per process, so the parent and the other tests keep theirs).
const (
	rollChildEnv   = "TRIBUTARY_ROLL_CHILD" // data dir: run as the child
	rollTopic      = "roll"
	rollSegBytes   = 8192
	rollSmallValue = 80   // a batch of it fits the space a failed roll leaves
	rollBigValue   = 1500 // a batch of it needs a roll
)

// rollValue is the value of the record at offset, n bytes long.
func rollValue(offset int64, n int) []byte {
	v := fmt.Appendf(nil, "%08d-", offset)
	return append(v, bytes.Repeat([]byte{'v'}, n-len(v))...)
}

// TestPartition_RollFailure_OutOfFileDescriptorsIsTransient runs a child
// that fills segments and makes each roll fail for lack of file
// descriptors at every step of the roll (the directory handle, then each of
// the new segment's three files): the append that needs the roll gets an
// error that names the partition and says what to raise, no file of the
// new segment stays behind, the partition keeps taking appends that fit
// the active segment, and once descriptors are free again the next append
// rolls. Retention's roll of an expired active segment fails the same way,
// without holding back the deletion of expired sealed segments. The child
// then exits without closing the log, right after a
// failed roll and an append into the old segment; the parent reopens the
// log and checks every acknowledged record, and that it rolls and appends.
func TestPartition_RollFailure_OutOfFileDescriptorsIsTransient(t *testing.T) {
	if dir := os.Getenv(rollChildEnv); dir != "" {
		rollChild(t, dir)
		return
	}
	dir := t.TempDir()
	runChild(t, "TestPartition_RollFailure_OutOfFileDescriptorsIsTransient", rollChildEnv, dir)
	sizes := ackedSizes(t, dir)

	l := openTestLog(t, dir)
	defer l.Close()
	check := func() {
		t.Helper()
		got := readAll(t, l, rollTopic, 0, 0)
		if len(got) != len(sizes) {
			t.Fatalf("the reopened log holds %d records; the child had %d acknowledged", len(got), len(sizes))
		}
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), sizes[i])) {
				t.Fatalf("record %d: offset %d, value %.20q…; want offset %d, %d bytes", i, r.Offset, r.Value, i, sizes[i])
			}
		}
	}
	check()
	if m := l.Metrics(); m.TailTruncations.Load() != 0 || m.CorruptBatches.Load() != 0 {
		t.Fatalf("recovery truncated %d tails and found %d corrupt batches; want none", m.TailTruncations.Load(), m.CorruptBatches.Load())
	}
	// The active segment is full: this append rolls.
	next := int64(len(sizes))
	if base, err := l.Append(t.Context(), rollTopic, 0, []Record{{Value: rollValue(next, rollBigValue)}}); err != nil || base != next {
		t.Fatalf("Append after the reopen = %d, %v; want %d, nil", base, err, next)
	}
	sizes = append(sizes, rollBigValue)
	check()
	checkSegmentFiles(t, testPartition(t, l, rollTopic, 0))
}

func rollChild(t *testing.T, dir string) {
	// The clock moves the partition past the wait after a failed roll.
	clock := &testClock{t: time.Now()}
	l := openTestLog(t, dir, func(o *Options) {
		o.RetentionCheckInterval, o.CleanerInterval, o.Now = time.Hour, time.Hour, clock.now
	})
	if err := l.CreateTopic(rollTopic, 1, map[string]string{ConfigSegmentBytes: strconv.Itoa(rollSegBytes)}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, rollTopic, 0)
	var sizes []int // of every acknowledged record, by offset
	appendOne := appendAcked(t, l, &sizes)
	mustAppend := func(size int) {
		t.Helper()
		if err := appendOne(size); err != nil {
			t.Fatalf("Append of %d bytes at offset %d: %v", size, len(sizes), err)
		}
	}
	activeSize := func() (int64, int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.segments[len(p.segments)-1].size, len(p.segments)
	}
	// fill appends small records until a big one no longer fits the
	// active segment (a small one still does).
	fill := func() int {
		for {
			size, segs := activeSize()
			if size+rollBigValue > rollSegBytes {
				return segs
			}
			mustAppend(rollSmallValue)
		}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		t.Helper()
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		mustAppend(rollBigValue)
	}
	for spare := range 5 {
		segs := fill()
		allowOnly(t, spare, lim)
		err := appendOne(rollBigValue)
		if spare == 4 {
			// Enough for the roll itself (the directory handle is closed
			// before the producer snapshot needs its two).
			restore()
			if err != nil {
				t.Fatalf("with 4 spare descriptors: Append = %v, want nil", err)
			}
			if _, n := activeSize(); n != segs+1 {
				t.Fatalf("with 4 spare descriptors: %d segments, want %d", n, segs+1)
			}
			continue
		}
		if err == nil {
			restore()
			t.Fatalf("with %d spare descriptors: the append that needs a roll succeeded", spare)
		}
		// The active segment still takes what fits, and nothing of the
		// new segment is left behind.
		if err2 := appendOne(rollSmallValue); err2 != nil {
			restore()
			t.Fatalf("with %d spare descriptors: after the failed roll (%v), an append that fits the active segment: %v", spare, err, err2)
		}
		restore()
		checkSegmentFiles(t, p)
		t.Logf("with %d spare descriptors: %v", spare, err)
		checkRollError(t, err, "roll-0")
		if _, n := activeSize(); n != segs {
			t.Fatalf("with %d spare descriptors: %d segments after the failed roll, want %d", spare, n, segs)
		}
		// The cause is gone: the next append after the wait rolls.
		clock.advance(rollBackoffMax)
		mustAppend(rollBigValue)
		if _, n := activeSize(); n != segs+1 {
			t.Fatalf("with %d spare descriptors: %d segments after the retried roll, want %d", spare, n, segs+1)
		}
		checkSegmentFiles(t, p)
	}
	// Retention's roll of an expired active segment fails the same way,
	// and leaves the partition writable too.
	_, segs := activeSize()
	cfg := p.cfg()
	cfg.RetentionMs = 1
	allowOnly(t, 1, lim)
	err := p.rollExpiredActive(clock.now().Add(time.Hour), cfg)
	restore()
	if err == nil {
		t.Fatal("with 1 spare descriptor: the roll of the expired active segment succeeded")
	}
	checkRollError(t, err, "roll-0")
	if _, n := activeSize(); n != segs {
		t.Fatalf("%d segments after retention's failed roll, want %d", n, segs)
	}
	checkSegmentFiles(t, p)
	mustAppend(rollSmallValue)

	// Nor does it hold back the deletion of expired sealed segments, which
	// frees descriptors.
	if err := l.CreateTopic("expire", 1, map[string]string{ConfigSegmentBytes: strconv.Itoa(rollSegBytes), ConfigRetentionMs: "60000"}); err != nil {
		t.Fatal(err)
	}
	pe := testPartition(t, l, "expire", 0)
	for range 20 {
		if _, err := l.Append(t.Context(), "expire", 0, []Record{{Value: rollValue(0, rollBigValue)}}); err != nil {
			t.Fatal(err)
		}
	}
	pe.mu.Lock()
	segs = len(pe.segments)
	pe.mu.Unlock()
	later := clock.now().Add(time.Hour)
	allowOnly(t, 1, lim)
	n, err := pe.enforceRetention(later)
	restore()
	if err == nil || n != segs-1 {
		t.Fatalf("retention with 1 spare descriptor deleted %d of %d segments, error %v; want %d and a roll error", n, segs, err, segs-1)
	}
	checkRollError(t, err, "expire-0")
	checkSegmentFiles(t, pe)
	if n, err := pe.enforceRetention(later.Add(rollBackoffMax)); err != nil || n != 1 {
		t.Fatalf("retention, descriptors free again: deleted %d segments, error %v; want 1 (the expired active one, rolled), nil", n, err)
	}
	if _, err := l.Append(t.Context(), "expire", 0, []Record{{Value: rollValue(0, rollSmallValue)}}); err != nil {
		t.Fatal(err)
	}
	checkSegmentFiles(t, pe)

	// Leave the log as a crash would, right after a failed roll and an
	// append into the old segment.
	clock.advance(time.Hour + rollBackoffMax) // past the wait after retention's failed roll
	fill()
	allowOnly(t, 2, lim)
	err = appendOne(rollBigValue)
	if err == nil {
		restore()
		t.Fatal("with 2 spare descriptors: the append that needs a roll succeeded")
	}
	if err := appendOne(rollSmallValue); err != nil {
		restore()
		t.Fatalf("after the failed roll, an append that fits the active segment: %v", err)
	}
	restore()
	checkSegmentFiles(t, p)
	var list []byte
	for _, n := range sizes {
		list = strconv.AppendInt(list, int64(n), 10)
		list = append(list, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "acked"), list, 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%d records acknowledged; exiting without closing the log\n", len(sizes))
	os.Exit(0)
}

// checkRollError checks that a roll failure for lack of descriptors says
// what failed, where, that nothing is lost and what to raise.
func checkRollError(t *testing.T, err error, partition string) {
	t.Helper()
	var re *RollError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *RollError", err, err)
	}
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("error %v does not wrap EMFILE", err)
	}
	for _, want := range []string{partition, "new segment", "ulimit -n", "LimitNOFILE", "segment.bytes", "partitions"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}
}

// checkSegmentFiles checks that the partition directory holds exactly the
// files of the segments the partition has, and no temporary file.
func checkSegmentFiles(t *testing.T, p *partition) {
	t.Helper()
	p.mu.Lock()
	var want []string
	for _, s := range p.segments {
		for _, ext := range []string{".log", ".index", ".timeindex"} {
			want = append(want, segmentName(s.base, ext))
		}
	}
	p.mu.Unlock()
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".log"), strings.HasSuffix(name, "index"):
			got = append(got, name)
		case strings.HasSuffix(name, ".tmp"):
			t.Errorf("temporary file %s left behind", name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("partition dir holds %v; its segments are %v", got, want)
	}
}

// allowOnly lowers the soft open files limit so that exactly spare more
// descriptors can be opened: descriptors take the lowest free number, and
// the limit bounds the number.
func allowOnly(t *testing.T, spare int, lim syscall.Rlimit) {
	t.Helper()
	limit, free := 0, 0
	for ; ; limit++ {
		if !fdOpen(limit) {
			if free == spare {
				break
			}
			free++
		}
	}
	low := syscall.Rlimit{Cur: uint64(limit), Max: lim.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatalf("set open files limit to %d: %v", limit, err)
	}
}

// fdOpen reports whether descriptor fd is open.
func fdOpen(fd int) bool {
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	return errno == 0
}

const rollBackoffChildEnv = "TRIBUTARY_ROLL_BACKOFF_CHILD" // data dir: run as the child

// TestPartition_RollFailure_Backoff runs a child whose rolls fail for lack
// of file descriptors (as in the test above) while appends that need a
// roll keep coming: the partition tries the roll once per backoff period
// (counted by Metrics.RollFailures), and the appends in between fail at
// once with a deferred *RollError that keeps the cause and says when the
// next try is. The wait doubles from rollBackoffMin to rollBackoffMax;
// retention's roll waits too; once descriptors are free the first append
// after the wait rolls, and that resets the wait. Every acknowledged record
// reads back. A settable clock stands in for the wait.
func TestPartition_RollFailure_Backoff(t *testing.T) {
	if dir := os.Getenv(rollBackoffChildEnv); dir != "" {
		rollBackoffChild(t, dir)
		return
	}
	runChild(t, "TestPartition_RollFailure_Backoff", rollBackoffChildEnv, t.TempDir())
}

func rollBackoffChild(t *testing.T, dir string) {
	clock := &testClock{t: time.Now()}
	l := openTestLog(t, dir, func(o *Options) {
		o.RetentionCheckInterval, o.CleanerInterval, o.Now = time.Hour, time.Hour, clock.now
	})
	defer l.Close()
	if err := l.CreateTopic(rollTopic, 1, map[string]string{ConfigSegmentBytes: strconv.Itoa(rollSegBytes)}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, rollTopic, 0)
	var sizes []int // of every acknowledged record, by offset
	appendOne := appendAcked(t, l, &sizes)
	segments := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.segments)
	}
	fill := func() {
		for {
			p.mu.Lock()
			size := p.segments[len(p.segments)-1].size
			p.mu.Unlock()
			if size+rollBigValue > rollSegBytes {
				return
			}
			if err := appendOne(rollSmallValue); err != nil {
				t.Fatal(err)
			}
		}
	}
	tries := func() int64 { return l.Metrics().RollFailures.Load() }
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		t.Helper()
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	defer restore()
	// rollFails appends a record that needs a roll and checks that it
	// fails with a *RollError for lack of descriptors, deferred or not,
	// and the next try at retryAt.
	rollFails := func(what string, deferred bool, retryAt time.Time) {
		t.Helper()
		before := tries()
		err := appendOne(rollBigValue)
		if err == nil {
			t.Fatalf("%s: the append that needs a roll succeeded", what)
		}
		checkRollError(t, err, "roll-0")
		var re *RollError
		errors.As(err, &re)
		wantTries := before + 1
		if deferred {
			wantTries = before
		}
		if re.Deferred != deferred || !re.RetryAt.Equal(retryAt) || tries() != wantTries {
			t.Fatalf("%s: %v: deferred %v, retry at %v, %d roll tries; want %v, %v, %d", what, err, re.Deferred, re.RetryAt, tries(), deferred, retryAt, wantTries)
		}
		if want := retryAt.UTC().Format("15:04:05.000"); !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %q does not say when the next try is (%s)", what, err, want)
		}
	}

	for range 3 {
		if err := appendOne(rollBigValue); err != nil {
			t.Fatal(err)
		}
	}
	fill()
	segs := segments()
	allowOnly(t, 1, lim)
	retryAt := clock.now().Add(rollBackoffMin)
	rollFails("first try", false, retryAt)
	// Within the wait, appends that need a roll fail at once; those that
	// fit the active segment go on.
	for i := range 5 {
		rollFails(fmt.Sprintf("append %d within the first wait", i), true, retryAt)
	}
	if err := appendOne(rollSmallValue); err != nil {
		t.Fatalf("an append that fits the active segment: %v", err)
	}
	// One try per wait, the wait doubling up to rollBackoffMax.
	wait := rollBackoffMin
	for range 10 {
		clock.advance(wait - time.Millisecond)
		rollFails(fmt.Sprintf("just before the end of a wait of %v", wait), true, retryAt)
		clock.advance(time.Millisecond)
		wait = min(2*wait, rollBackoffMax)
		retryAt = clock.now().Add(wait)
		rollFails(fmt.Sprintf("at the end of the wait, the next one %v", wait), false, retryAt)
	}
	if wait != rollBackoffMax {
		t.Fatalf("the wait grew to %v, want %v", wait, rollBackoffMax)
	}
	// Retention's roll of the expired active segment waits too.
	clock.advance(5 * time.Millisecond)
	cfg := p.cfg()
	cfg.RetentionMs = 1
	before := tries()
	err := p.rollExpiredActive(clock.now(), cfg)
	var re *RollError
	if !errors.As(err, &re) || !re.Deferred || tries() != before {
		t.Fatalf("retention's roll within the wait: %v, %d roll tries; want a deferred *RollError and %d tries", err, tries(), before)
	}
	checkSegmentFiles(t, p)

	// The cause is gone: the wait still holds, and the first append after
	// it rolls.
	restore()
	rollFails("descriptors free again, within the wait", true, retryAt)
	clock.advance(retryAt.Sub(clock.now()))
	if err := appendOne(rollBigValue); err != nil {
		t.Fatalf("descriptors free again, the wait over: %v", err)
	}
	if n := segments(); n != segs+1 {
		t.Fatalf("%d segments after the roll, want %d", n, segs+1)
	}
	checkSegmentFiles(t, p)

	// The roll reset the wait.
	fill()
	allowOnly(t, 1, lim)
	rollFails("first try after a roll", false, clock.now().Add(rollBackoffMin))
	restore()
	clock.advance(rollBackoffMin)
	if err := appendOne(rollBigValue); err != nil {
		t.Fatalf("after the first wait: %v", err)
	}
	if n := segments(); n != segs+2 {
		t.Fatalf("%d segments after the second roll, want %d", n, segs+2)
	}
	checkSegmentFiles(t, p)

	got := readAll(t, l, rollTopic, 0, 0)
	if len(got) != len(sizes) {
		t.Fatalf("the log holds %d records; %d were acknowledged", len(got), len(sizes))
	}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), sizes[i])) {
			t.Fatalf("record %d: offset %d, value %.20q…; want offset %d, %d bytes", i, r.Offset, r.Value, i, sizes[i])
		}
	}
	t.Logf("%d records, %d roll tries", len(sizes), tries())
}

const rollConcurrentChildEnv = "TRIBUTARY_ROLL_CONCURRENT_CHILD" // data dir: run as the child

// TestPartition_RollFailure_ConcurrentAppenders runs a child in which
// several goroutines append to one partition, records that need a roll and
// records that fit, while its rolls fail for lack of descriptors, retention
// tries its own roll of the expired active segment, and the clock moves on
// past the backoff and, once, back: every append either succeeds at an
// offset no other got or fails with a *RollError; once descriptors are free
// the partition rolls again; every acknowledged record reads back at its
// offset, also after a close during a backoff and a reopen, where the
// first append that needs a roll rolls at once.
func TestPartition_RollFailure_ConcurrentAppenders(t *testing.T) {
	if dir := os.Getenv(rollConcurrentChildEnv); dir != "" {
		rollConcurrentChild(t, dir)
		return
	}
	runChild(t, "TestPartition_RollFailure_ConcurrentAppenders", rollConcurrentChildEnv, t.TempDir())
}

func rollConcurrentChild(t *testing.T, dir string) {
	clock := &testClock{t: time.Now()}
	opts := func(o *Options) { o.RetentionCheckInterval, o.CleanerInterval, o.Now = time.Hour, time.Hour, clock.now }
	l := openTestLog(t, dir, opts)
	if err := l.CreateTopic(rollTopic, 1, map[string]string{ConfigSegmentBytes: strconv.Itoa(rollSegBytes)}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, rollTopic, 0)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			panic(err)
		}
	}
	defer restore()

	var mu sync.Mutex
	acked := map[int64][]byte{} // offset -> value of every acknowledged record
	value := func(g, i, size int) []byte {
		v := fmt.Appendf(nil, "g%d-%d-", g, i)
		return append(v, bytes.Repeat([]byte{'v'}, size-len(v))...)
	}
	appendOne := func(v []byte) error {
		base, err := l.Append(t.Context(), rollTopic, 0, []Record{{Value: v}})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if old, ok := acked[base]; ok {
			t.Errorf("offset %d handed out twice: to %.8q and %.8q", base, old, v)
		}
		acked[base] = v
		return nil
	}
	check := func(l *Log) {
		t.Helper()
		got := readAll(t, l, rollTopic, 0, 0)
		mu.Lock()
		defer mu.Unlock()
		if len(got) != len(acked) {
			t.Fatalf("the log holds %d records; %d were acknowledged", len(got), len(acked))
		}
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, acked[r.Offset]) {
				t.Fatalf("record %d: offset %d, value %.12q; want %.12q", i, r.Offset, r.Value, acked[int64(i)])
			}
		}
	}
	for i := range 8 {
		if err := appendOne(value(9, i, rollBigValue)); err != nil {
			t.Fatal(err)
		}
	}

	fill := func(tag int) {
		t.Helper()
		for i := 0; ; i++ {
			p.mu.Lock()
			size := p.segments[len(p.segments)-1].size
			p.mu.Unlock()
			if size+rollBigValue > rollSegBytes {
				return
			}
			if err := appendOne(value(tag, i, rollSmallValue)); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The clock goes back by an hour right after a failed roll: the wait
	// is still at most rollBackoffMax, not an hour more.
	fill(10)
	allowOnly(t, 1, lim)
	err := appendOne(value(10, 100, rollBigValue))
	restore()
	var re *RollError
	if !errors.As(err, &re) || re.Deferred {
		t.Fatalf("append that needs a roll, 1 spare descriptor: %v; want a *RollError of a roll tried", err)
	}
	clock.advance(-time.Hour)
	clock.advance(rollBackoffMax)
	if err := appendOne(value(10, 101, rollBigValue)); err != nil {
		t.Fatalf("clock back by an hour after a failed roll, then on by %v: %v", rollBackoffMax, err)
	}

	fill(11)
	allowOnly(t, 1, lim)
	const appenders, perAppender = 4, 60
	var wg sync.WaitGroup
	var rollErrs, deferred atomic.Int64
	for g := range appenders {
		wg.Go(func() {
			for i := range perAppender {
				size := rollSmallValue
				if (g+i)%3 == 0 {
					size = rollBigValue
				}
				err := appendOne(value(g, i, size))
				var re *RollError
				switch {
				case err == nil:
				case errors.As(err, &re):
					rollErrs.Add(1)
					if re.Deferred {
						deferred.Add(1)
					}
				default:
					t.Errorf("append %d of appender %d: %v; want nil or a *RollError", i, g, err)
				}
				if g == 0 && i == perAppender/2 {
					restore() // the cause is gone; the backoff still holds for a while
				}
			}
		})
	}
	wg.Go(func() { // retention's roll of the expired active segment
		cfg := p.cfg()
		cfg.RetentionMs = 1
		for range perAppender {
			if err := p.rollExpiredActive(clock.now().Add(time.Hour), cfg); err != nil {
				var re *RollError
				if !errors.As(err, &re) {
					t.Errorf("retention's roll: %v; want nil or a *RollError", err)
				}
			}
			runtime.Gosched()
		}
	})
	wg.Go(func() { // the clock: past the waits, and once back by an hour
		for i := range perAppender {
			d := 40 * time.Millisecond
			if i == perAppender/3 {
				d = -time.Hour
			}
			clock.advance(d)
			runtime.Gosched()
		}
	})
	wg.Wait()
	restore()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d appends failed with a RollError, %d of them deferred; %d roll tries failed", rollErrs.Load(), deferred.Load(), l.Metrics().RollFailures.Load())
	if rollErrs.Load() == 0 || deferred.Load() == 0 {
		t.Fatalf("%d appends failed with a RollError, %d deferred; the test wants both", rollErrs.Load(), deferred.Load())
	}
	check(l)
	clock.advance(rollBackoffMax)
	if err := appendOne(value(9, 100, rollBigValue)); err != nil {
		t.Fatalf("descriptors free, the wait over: %v", err)
	}
	check(l)
	checkSegmentFiles(t, p)

	// Close during a backoff, reopen: nothing lost, and the backoff is gone.
	fill(12)
	allowOnly(t, 1, lim)
	err = appendOne(value(9, 300, rollBigValue))
	restore()
	if !errors.As(err, &re) {
		t.Fatalf("append that needs a roll, 1 spare descriptor: %v; want a *RollError", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close during a backoff: %v", err)
	}
	l = openTestLog(t, dir, opts)
	defer l.Close()
	check(l)
	if err := appendOne(value(9, 400, rollBigValue)); err != nil {
		t.Fatalf("first append after the reopen, which needs a roll: %v", err)
	}
	check(l)
	checkSegmentFiles(t, testPartition(t, l, rollTopic, 0))
}

// runChild runs the test named test again in a child process, with env
// set to dir: the test, seeing env, runs its child half there (a process
// whose file descriptors can be limited, or which can exit without closing
// the log). It fails the test if the child fails, and logs its output.
func runChild(t *testing.T, test, env, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

// ackedSizes returns the sizes of the records a child acknowledged, by
// offset, from the file "acked" it left in dir.
func ackedSizes(t *testing.T, dir string) []int {
	t.Helper()
	acked, err := os.ReadFile(filepath.Join(dir, "acked"))
	if err != nil {
		t.Fatalf("the child wrote no list of acknowledged records: %v", err)
	}
	var sizes []int
	for _, f := range strings.Fields(string(acked)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// appendAcked returns a function that appends one record of size bytes to
// partition 0 of rollTopic in l, checks that it lands at the next offset,
// and records its size in *sizes (by offset) once acknowledged.
func appendAcked(t *testing.T, l *Log, sizes *[]int) func(size int) error {
	return func(size int) error {
		t.Helper()
		next := int64(len(*sizes))
		base, err := l.Append(t.Context(), rollTopic, 0, []Record{{Value: rollValue(next, size)}})
		if err != nil {
			return err
		}
		if base != next {
			t.Fatalf("Append went to offset %d, want %d", base, next)
		}
		*sizes = append(*sizes, size)
		return nil
	}
}
