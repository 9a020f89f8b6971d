//go:build linux

package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

const (
	rollTimeChildEnv      = "TRIBUTARY_ROLL_TIME_CHILD"      // data dir: run as the child
	rollRetentionChildEnv = "TRIBUTARY_ROLL_RETENTION_CHILD" // data dir: run as the child
	rollSegmentMs         = 60_000
)

// countLogLines counts the lines of slog text output that hold every one
// of want.
func countLogLines(out string, want ...string) int {
	n := 0
	for line := range strings.Lines(out) {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			n++
		}
	}
	return n
}

// TestPartition_RollFailure_TimeOnly runs a child whose active segment is
// past segment.ms while rolls fail for lack of file descriptors: a roll due
// only by time is housekeeping, so the appends that fit the active segment
// succeed into it; the failed try is counted and logged once (at Warn, with
// the next try's time) for the whole run of failures, and tried again after
// the backoff. A roll due by size still fails the append, as before. Once
// descriptors are free the next append rolls. The child then leaves the
// log as a crash would, right after time-only failures; the parent reopens
// it and reads every acknowledged record back.
func TestPartition_RollFailure_TimeOnly(t *testing.T) {
	if dir := os.Getenv(rollTimeChildEnv); dir != "" {
		rollTimeChild(t, dir)
		return
	}
	dir := t.TempDir()
	runChild(t, "TestPartition_RollFailure_TimeOnly", rollTimeChildEnv, dir)
	sizes := ackedSizes(t, dir)
	l := openTestLog(t, dir)
	defer l.Close()
	got := readAll(t, l, rollTopic, 0, 0)
	if len(got) != len(sizes) {
		t.Fatalf("the reopened log holds %d records; the child had %d acknowledged", len(got), len(sizes))
	}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), sizes[i])) {
			t.Fatalf("record %d: offset %d, value %.20q…; want offset %d, %d bytes", i, r.Offset, r.Value, i, sizes[i])
		}
	}
	if m := l.Metrics(); m.TailTruncations.Load() != 0 || m.CorruptBatches.Load() != 0 {
		t.Fatalf("recovery truncated %d tails and found %d corrupt batches; want none", m.TailTruncations.Load(), m.CorruptBatches.Load())
	}
	checkSegmentFiles(t, testPartition(t, l, rollTopic, 0))
}

func rollTimeChild(t *testing.T, dir string) {
	clock := &testClock{t: time.Now()}
	var logged syncbuf.Buffer
	l := openTestLog(t, dir, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		o.RetentionCheckInterval, o.CleanerInterval, o.Now = time.Hour, time.Hour, clock.now
	})
	if err := l.CreateTopic(rollTopic, 1, map[string]string{
		ConfigSegmentBytes: strconv.Itoa(rollSegBytes), ConfigSegmentMs: strconv.Itoa(rollSegmentMs),
	}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, rollTopic, 0)
	var sizes []int // of every acknowledged record, by offset
	appendOne := appendAcked(t, l, &sizes)
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
	mustAppend := func(what string, size int) {
		t.Helper()
		if err := appendOne(size); err != nil {
			restore()
			t.Fatalf("%s: Append of %d bytes at offset %d: %v", what, size, len(sizes), err)
		}
	}
	segments := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.segments)
	}
	tries := func() int64 { return l.Metrics().RollFailures.Load() }
	warnings := func() int {
		return countLogLines(logged.String(), "level=WARN", "roll to a new segment failed", "retry_at=")
	}
	check := func(what string, wantSegs int, wantTries int64, wantWarnings int) {
		t.Helper()
		if n, tr, w := segments(), tries(), warnings(); n != wantSegs || tr != wantTries || w != wantWarnings {
			restore()
			t.Fatalf("%s: %d segments, %d roll tries failed, %d warnings logged; want %d, %d, %d\n%s",
				what, n, tr, w, wantSegs, wantTries, wantWarnings, logged.String())
		}
	}

	for range 3 {
		mustAppend("before", rollSmallValue)
	}
	segs := segments()
	clock.advance(2 * rollSegmentMs * time.Millisecond) // a roll is due by time only
	allowOnly(t, 1, lim)
	mustAppend("the roll due by segment.ms fails", rollSmallValue)
	check("the roll due by segment.ms fails", segs, 1, 1)
	if !strings.Contains(logged.String(), "reason=segment.ms") {
		restore()
		t.Fatalf("the warning does not say the roll was due by segment.ms:\n%s", logged.String())
	}
	for i := range 5 {
		mustAppend(fmt.Sprintf("append %d within the backoff", i), rollSmallValue)
	}
	check("within the backoff", segs, 1, 1)
	// Several batches in one write: each goes into the current segment.
	next := int64(len(sizes))
	var batches [][]byte
	for i := range int64(3) {
		batches = append(batches, encodeBatch([]Record{{Value: rollValue(next+i, rollSmallValue)}}, clock.now(), "none", noProducer))
	}
	if bases, err := p.appendBatches(t.Context(), batches); err != nil || len(bases) != 3 || bases[0] != next || bases[2] != next+2 {
		restore()
		t.Fatalf("three batches in one write within the backoff: bases %v, %v; want from %d, nil", bases, err, next)
	}
	sizes = append(sizes, rollSmallValue, rollSmallValue, rollSmallValue)
	check("three batches in one write within the backoff", segs, 1, 1)
	clock.advance(rollBackoffMin)
	mustAppend("the backoff over, the roll fails again", rollSmallValue)
	check("the backoff over, the roll fails again", segs, 2, 1)
	checkSegmentFiles(t, p)

	// A roll due by size still fails the append that needs it.
	for {
		p.mu.Lock()
		size := p.segments[len(p.segments)-1].size
		p.mu.Unlock()
		if size+rollBigValue > rollSegBytes {
			break
		}
		mustAppend("fill", rollSmallValue)
	}
	err := appendOne(rollBigValue)
	var re *RollError
	if !errors.As(err, &re) || !re.Deferred {
		restore()
		t.Fatalf("an append that needs a roll by size, within the backoff: %v; want a deferred *RollError", err)
	}
	checkRollError(t, err, "roll-0")
	clock.advance(rollBackoffMax)
	err = appendOne(rollBigValue)
	if !errors.As(err, &re) || re.Deferred {
		restore()
		t.Fatalf("an append that needs a roll by size, the backoff over: %v; want a *RollError of a roll tried", err)
	}
	checkRollError(t, err, "roll-0")
	check("a roll by size fails", segs, 3, 1)
	checkSegmentFiles(t, p)

	// Descriptors free again: after the backoff, the next append rolls.
	restore()
	clock.advance(rollBackoffMax)
	mustAppend("descriptors free again", rollSmallValue)
	check("descriptors free again", segs+1, 3, 1)
	checkSegmentFiles(t, p)

	// A new run of failures is logged again; the log is left as a crash
	// would leave it, right after appends that went into the current
	// segment instead of a new one.
	mustAppend("a young segment", rollSmallValue)
	clock.advance(2 * rollSegmentMs * time.Millisecond)
	allowOnly(t, 1, lim)
	for i := range 3 {
		mustAppend(fmt.Sprintf("append %d of the second run", i), rollSmallValue)
	}
	restore()
	check("a second run of failures", segs+1, 4, 2)
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

// TestLog_EnforceRetention_FailedRollLoggedOnce runs a child in which
// retention's roll of an expired active segment fails for lack of file
// descriptors on every check: the failure is logged once per run of
// failures, at Warn with the next try's time, never at Error; once the
// roll succeeds the segment goes, and a new run is logged again.
func TestLog_EnforceRetention_FailedRollLoggedOnce(t *testing.T) {
	if dir := os.Getenv(rollRetentionChildEnv); dir != "" {
		rollRetentionChild(t, dir)
		return
	}
	runChild(t, "TestLog_EnforceRetention_FailedRollLoggedOnce", rollRetentionChildEnv, t.TempDir())
}

func rollRetentionChild(t *testing.T, dir string) {
	clock := &testClock{t: time.Now()}
	var logged syncbuf.Buffer
	l := openTestLog(t, dir, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		o.RetentionCheckInterval, o.CleanerInterval, o.Now = time.Hour, time.Hour, clock.now
	})
	defer l.Close()
	const topic = "expire"
	if err := l.CreateTopic(topic, 1, map[string]string{ConfigRetentionMs: "60000"}); err != nil {
		t.Fatal(err)
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
	defer restore()
	tries := func() int64 { return l.Metrics().RollFailures.Load() }
	check := func(what string, wantTries int64, wantWarnings int) {
		t.Helper()
		out := logged.String()
		warnings := countLogLines(out, "level=WARN", "roll to a new segment failed", "retry_at=", "reason=retention.ms")
		errs := countLogLines(out, "level=ERROR")
		if tr := tries(); tr != wantTries || warnings != wantWarnings || errs != 0 {
			restore()
			t.Fatalf("%s: %d roll tries failed, %d warnings and %d errors logged; want %d, %d, 0\n%s",
				what, tr, warnings, errs, wantTries, wantWarnings, out)
		}
	}
	expireOnce := func(run int) {
		t.Helper()
		for i := range 3 {
			if _, err := l.Append(t.Context(), topic, 0, []Record{{Value: rollValue(int64(i), rollSmallValue)}}); err != nil {
				t.Fatal(err)
			}
		}
		clock.advance(time.Hour)
		before := tries()
		allowOnly(t, 1, lim)
		// Checks 25 ms apart: the first tries the roll, the next three
		// fall within its backoff (100 ms), the fifth tries again.
		for range 5 {
			l.EnforceRetention()
			clock.advance(rollBackoffMin / 4)
		}
		restore()
		check(fmt.Sprintf("run %d: 5 retention checks while rolls fail", run), before+2, run)
		clock.advance(rollBackoffMax)
		l.EnforceRetention()
		check(fmt.Sprintf("run %d: descriptors free again", run), before+2, run)
		if start, end, err := l.Offsets(topic, 0); err != nil || start != end {
			t.Fatalf("run %d: after retention rolled the expired segment, offsets [%d, %d), %v; want none left", run, start, end, err)
		}
	}
	expireOnce(1)
	expireOnce(2)
}

// TestRollDue checks why a segment must roll before a batch: size and the
// offset range (hard: the append fails when the roll does) come before
// segment.ms (housekeeping), which a failed roll in the same write turns
// off; an empty segment never rolls.
func TestRollDue(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cfg := TopicConfig{SegmentBytes: 1000, SegmentMs: 60_000}
	young := &segment{base: 100, created: now}
	old := &segment{base: 100, created: now.Add(-time.Hour)}
	one := batchMeta{BaseOffset: 0, LastOffset: 0}
	wide := batchMeta{BaseOffset: 0, LastOffset: 10}
	for _, tc := range []struct {
		name      string
		active    *segment
		pos, next int64
		size      int64
		meta      batchMeta
		aged      bool
		want      string
	}{
		{"fits", young, 500, 150, 100, one, false, ""},
		{"empty segment, too big and old", old, 0, 100, 5000, one, false, ""},
		{"too big", young, 950, 150, 100, one, false, rollFull},
		{"too big and old", old, 950, 150, 100, one, false, rollFull},
		{"too big, old, an aged roll failed", old, 950, 150, 100, one, true, rollFull},
		{"last offset past int32", young, 500, 100 + math.MaxInt32 - 5, 100, wide, false, rollOffsets},
		{"last offset at int32", young, 500, 100 + math.MaxInt32 - 10, 100, wide, false, ""},
		{"offsets and old, an aged roll failed", old, 500, 100 + math.MaxInt32 + 1, 100, one, true, rollOffsets},
		{"old", old, 500, 150, 100, one, false, rollAged},
		{"old, an aged roll failed", old, 500, 150, 100, one, true, ""},
	} {
		if got := rollDue(cfg, tc.active, tc.pos, tc.next, tc.size, tc.meta, now, tc.aged); got != tc.want {
			t.Errorf("%s: rollDue = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRoll_SegmentMsBeyondNanosecondsNeverRolls: Kafka accepts segment.ms
// up to Long.MAX_VALUE ("never roll by time"), which overflows as
// nanoseconds (MaxInt64 ms was -1 ms, and every append rolled a segment).
func TestRoll_SegmentMsBeyondNanosecondsNeverRolls(t *testing.T) {
	for _, ms := range []string{"9223372036854775807", "10000000000000"} {
		t.Run(ms, func(t *testing.T) {
			l := openTestLog(t, t.TempDir())
			defer l.Close()
			if err := l.CreateTopic("t", 1, map[string]string{ConfigSegmentMs: ms}); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if _, err := l.Append(context.Background(), "t", 0, []Record{{Value: []byte(fmt.Sprint(i))}}); err != nil {
					t.Fatal(err)
				}
			}
			d, err := l.DescribeTopic("t")
			if err != nil {
				t.Fatal(err)
			}
			if n := d.Partitions[0].Segments; n != 1 {
				t.Fatalf("segment.ms=%s: 5 small appends made %d segments; want 1 (no roll is due)", ms, n)
			}
		})
	}
}

// TestRetention_KeepsSegmentsNotYetReadable: retention deletes a segment
// only once every record in it is readable (below the high watermark, as
// Kafka's deletable segments are): records written and rolled past but not
// yet fsync'ed must not vanish before any reader could see them. The test
// holds the partition's readable end back, as it is between a write and
// its fsync.
func TestRetention_KeepsSegmentsNotYetReadable(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigSegmentBytes: "1024", ConfigRetentionBytes: "1"}); err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("v"), 600) // about one batch per segment
	for range 6 {
		if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: value}}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := l.partitionForWrite("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	if len(p.segments) < 5 {
		p.mu.Unlock()
		t.Fatalf("%d segments after 6 appends of 600 bytes with segment.bytes 1024; the test needs 5 or more", len(p.segments))
	}
	readable := p.segments[2].base // records from here on: written, not yet readable
	p.visible = readable
	p.mu.Unlock()

	if _, err := p.enforceRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	start := p.logStart
	p.mu.Unlock()
	if start > readable {
		t.Fatalf("retention moved the log start to %d, past the readable end %d: it deleted records no reader could have seen", start, readable)
	}
	if start != p.segments[0].base || start == 0 {
		t.Fatalf("log start %d: retention.bytes 1 should still delete the readable segments before offset %d", start, readable)
	}
}
