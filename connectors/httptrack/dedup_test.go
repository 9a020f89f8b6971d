package httptrack

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTestJournal writes a journal of entries seq 1..n, each with k ids,
// and returns its bytes and the end offset of each entry.
func writeTestJournal(t *testing.T, path string, n, k int, now int64) ([]byte, []int) {
	t.Helper()
	j, rec, err := loadJournal(path, newDedupSet(time.Hour, 1000), 0, now)
	if err != nil || rec.dropped != 0 {
		t.Fatalf("new journal: %v %v", err, rec)
	}
	var ends []int
	size := len(journalMagic)
	for seq := 1; seq <= n; seq++ {
		var hs []msgHash
		for i := range k {
			hs = append(hs, hashID("key", fmt.Sprintf("m%d-%d", seq, i)))
		}
		b := appendJournalEntry(nil, uint64(seq), now, hs)
		if err := j.write(b); err != nil {
			t.Fatal(err)
		}
		size += len(b)
		ends = append(ends, size)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != size {
		t.Fatalf("journal is %d bytes, want %d", len(data), size)
	}
	return data, ends
}

// has reports which of entries 1..n the set holds, all k ids of each, as
// a string like "1,2,3"; it fails on an entry held in part.
func has(t *testing.T, d *dedupSet, n, k int, now int64) string {
	t.Helper()
	var out []string
	for seq := 1; seq <= n; seq++ {
		got := 0
		for i := range k {
			if _, ok := d.lookup(hashID("key", fmt.Sprintf("m%d-%d", seq, i)), now); ok {
				got++
			}
		}
		switch got {
		case k:
			out = append(out, fmt.Sprint(seq))
		case 0:
		default:
			t.Fatalf("entry %d is held in part: %d of %d ids", seq, got, k)
		}
	}
	return strings.Join(out, ",")
}

// TestJournal_TornTail cuts the journal at every byte of its last entry, as a crash in the middle of a write would: the whole entries
// before the cut are kept, the rest is dropped and reported as a torn tail
// (not corruption), the file is rewritten to the kept entries, and
// appending after the recovery works.
func TestJournal_TornTail(t *testing.T) {
	const n, k = 5, 2
	now := time.Now().UnixMilli()
	dir := t.TempDir()
	data, ends := writeTestJournal(t, filepath.Join(dir, "full.dedup"), n, k, now)

	// Every byte of the last entry, and the end of the one before.
	for cut := ends[n-2] - 3; cut <= len(data); cut++ {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.dedup", cut))
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		whole := 0
		for whole < n && ends[whole] <= cut {
			whole++
		}
		d := newDedupSet(time.Hour, 1000)
		j, rec, err := loadJournal(path, d, 100, now)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		var want []string
		for i := 1; i <= whole; i++ {
			want = append(want, fmt.Sprint(i))
		}
		if got := has(t, d, n, k, now); got != strings.Join(want, ",") {
			t.Errorf("cut at %d: set holds entries %q, want %q", cut, got, strings.Join(want, ","))
		}
		atBoundary := cut == ends[whole-1]
		switch {
		case atBoundary && rec.dropped != 0:
			t.Errorf("cut at %d (an entry boundary): recovery %q, want none", cut, rec)
		case !atBoundary && (rec.dropped != int64(cut-ends[whole-1]) || rec.offset != int64(ends[whole-1]) || rec.corrupt):
			t.Errorf("cut at %d: recovery %+v, want a torn tail of %d bytes at %d", cut, rec, cut-ends[whole-1], ends[whole-1])
		case !atBoundary && !strings.Contains(rec.String(), "torn tail"):
			t.Errorf("cut at %d: %q does not say torn tail", cut, rec)
		}
		if j.size != int64(ends[whole-1]) {
			t.Errorf("cut at %d: rewritten journal is %d bytes, want %d", cut, j.size, ends[whole-1])
		}
		// Appending after the recovery leaves a journal that loads whole.
		b := appendJournalEntry(nil, uint64(n+1), now, []msgHash{hashID("key", "after")})
		if err := j.write(b); err != nil {
			t.Fatal(err)
		}
		if err := j.close(); err != nil {
			t.Fatal(err)
		}
		d2 := newDedupSet(time.Hour, 1000)
		j2, rec2, err := loadJournal(path, d2, 100, now)
		if err != nil || rec2.dropped != 0 {
			t.Fatalf("cut at %d, reload after append: %v, recovery %q", cut, err, rec2)
		}
		j2.close()
		if _, ok := d2.lookup(hashID("key", "after"), now); !ok || d2.len() != whole*k+1 {
			t.Errorf("cut at %d: after append and reload the set holds %d ids, want %d with the new one", cut, d2.len(), whole*k+1)
		}
	}
}

// TestJournal_ZeroTail treats zeros at the end (data a machine crash did
// not write) as a torn tail.
func TestJournal_ZeroTail(t *testing.T) {
	now := time.Now().UnixMilli()
	path := filepath.Join(t.TempDir(), "j.dedup")
	data, ends := writeTestJournal(t, path, 3, 2, now)
	data = append(data, make([]byte, 100)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDedupSet(time.Hour, 1000)
	j, rec, err := loadJournal(path, d, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	j.close()
	if rec.corrupt || rec.dropped != 100 || rec.offset != int64(ends[2]) || has(t, d, 3, 2, now) != "1,2,3" {
		t.Errorf("recovery %+v, set %q: want a torn tail of 100 bytes and all 3 entries", rec, has(t, d, 3, 2, now))
	}
}

// TestJournal_Corrupt flips a byte in the middle: the entries before it are
// kept, and the rest is dropped and reported as corruption, not as a torn
// tail; the source starts, and warns.
func TestJournal_Corrupt(t *testing.T) {
	now := time.Now().UnixMilli()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.web.0.dedup") // the harness's pipeline p, source web, task 0
	data, ends := writeTestJournal(t, path, 4, 2, now)
	data[ends[1]+20] ^= 0xff // inside entry 3's payload
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDedupSet(time.Hour, 1000)
	j, rec, err := loadJournal(path, d, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	j.close()
	if !rec.corrupt || rec.offset != int64(ends[1]) || rec.dropped != int64(len(data)-ends[1]) || !strings.Contains(rec.String(), "corrupt") {
		t.Errorf("recovery %+v %q, want corruption at %d", rec, rec, ends[1])
	}
	if got := has(t, d, 4, 2, now); got != "1,2" {
		t.Errorf("set holds entries %q, want 1,2", got)
	}

	// The source opens on a corrupt journal, says so, and keeps working.
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, map[string]string{"state.dir": dir}, []byte(`{"seq":4}`))
	rep := h.src.Report()
	if rep.Gauges["httptrack_journal_dropped_bytes"] != float64(len(data)-ends[1]) {
		t.Errorf("dropped bytes gauge %v, want %d", rep.Gauges["httptrack_journal_dropped_bytes"], len(data)-ends[1])
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "corrupt")
	}
	if !found {
		t.Errorf("warnings %q, want one about the corrupt journal", rep.Warnings)
	}
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"x"}`, auth), 200)
}

// TestJournal_BadMagic refuses a file that is not a journal, with a hint.
func TestJournal_BadMagic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.dedup")
	if err := os.WriteFile(path, []byte("something else entirely"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := loadJournal(path, newDedupSet(time.Hour, 10), 0, 0)
	if err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("err %v, want bad magic with a hint", err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, []byte("something else entirely")) {
		t.Error("the file was changed")
	}
}

// TestJournal_Compact checks that the journal is compacted to the live set
// while requests keep coming, and that a restart remembers exactly the
// live ids.
func TestJournal_Compact(t *testing.T) {
	old := compactMinBytes
	compactMinBytes = 1 << 10
	t.Cleanup(func() { compactMinBytes = old })
	dir := t.TempDir()
	values := map[string]string{"state.dir": dir, "dedup.max.ids": "10"}
	h := start(t, values, nil)
	msg := `{"userId":"u","event":"E","messageId":"m%d"}`
	for i := range 200 {
		wantStatus(t, h.post("/v1/track", fmt.Sprintf(msg, i), auth), 200)
	}
	pos := h.position()
	h.stop()
	fi, err := os.Stat(filepath.Join(dir, "p.web.0.dedup"))
	if err != nil {
		t.Fatal(err)
	}
	// 200 entries of 40 bytes would be 8 KB; compaction keeps it near
	// the threshold.
	if fi.Size() > 2<<10 {
		t.Errorf("journal is %d bytes after 200 ids with 10 live: not compacted", fi.Size())
	}
	h2 := start(t, values, pos)
	for _, i := range []int{199, 190, 189, 5} { // the remembered first: a new id evicts the oldest
		wantStatus(t, h2.post("/v1/track", fmt.Sprintf(msg, i), auth), 200)
	}
	var ids []string
	for _, r := range h2.records() {
		ids = append(ids, value(t, r)["messageId"].(string))
	}
	if got := strings.Join(ids, ","); got != "m189,m5" {
		t.Errorf("after restart the records are %s, want m189,m5 (m190..m199 remembered)", got)
	}
}

// TestJournal_FutureEntriesAge: entries dated after now (written while the
// clock was ahead) are loaded as arriving now: they still catch duplicates
// for a whole window from now, then expire, and a later load drops them,
// instead of being kept until their date.
func TestJournal_FutureEntriesAge(t *testing.T) {
	const n, k = 3, 2
	window := time.Hour.Milliseconds()
	now := time.Now().UnixMilli()
	path := filepath.Join(t.TempDir(), "httptrack.dedup")
	writeTestJournal(t, path, n, k, now+365*24*window) // a year ahead
	d := newDedupSet(time.Hour, 1000)
	j, _, err := loadJournal(path, d, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if got := has(t, d, n, k, now+window-1); got != "1,2,3" {
		t.Errorf("a window less 1 ms after loading the set holds %q, want 1,2,3", got)
	}
	if got := has(t, d, n, k, now+window); got != "" {
		t.Errorf("a window after loading the set holds %q, want none", got)
	}
	d2 := newDedupSet(time.Hour, 1000)
	j2, _, err := loadJournal(path, d2, 100, now+window)
	if err != nil {
		t.Fatal(err)
	}
	if err := j2.close(); err != nil {
		t.Fatal(err)
	}
	if d2.len() != 0 {
		t.Errorf("loaded a window later, the set holds %d ids, want 0", d2.len())
	}
}

// TestJournal_FutureEntryBeforeOlder: an entry dated ahead followed by one
// written after the clock was set back keeps its whole window from the load:
// loading the older entry does not age the one before it.
func TestJournal_FutureEntryBeforeOlder(t *testing.T) {
	window := time.Hour.Milliseconds()
	now := time.Now().UnixMilli()
	path := filepath.Join(t.TempDir(), "httptrack.dedup")
	j, _, err := loadJournal(path, newDedupSet(time.Hour, 1000), 0, now)
	if err != nil {
		t.Fatal(err)
	}
	ahead, back := hashID("key", "ahead"), hashID("key", "back")
	b := appendJournalEntry(nil, 1, now+24*window, []msgHash{ahead})
	b = appendJournalEntry(b, 2, now-window/2, []msgHash{back})
	if err := j.write(b); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	d := newDedupSet(time.Hour, 1000)
	if j, _, err = loadJournal(path, d, 100, now); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.lookup(ahead, now+window-1); !ok {
		t.Errorf("the entry dated ahead is forgotten within a window of the load")
	}
	if _, ok := d.lookup(back, now+window/2-1); !ok {
		t.Errorf("the entry written after the clock was set back is forgotten within its window")
	}
}

// TestDedupSet_FutureEntryAges: an id added while the clock was ahead ages
// from when the clock is back (at most futureSkew later), rather than from
// its date; an id added out of order by less than futureSkew keeps its
// whole window.
func TestDedupSet_FutureEntryAges(t *testing.T) {
	window := time.Hour.Milliseconds()
	skew := futureSkew.Milliseconds()
	d := newDedupSet(time.Hour, 1000)
	const now = 1_000_000_000
	ahead, late := hashID("k", "ahead"), hashID("k", "late")
	d.add(ahead, seen{seq: 1, at: now + 365*24*window}) // the clock a year ahead
	d.add(late, seen{seq: 2, at: now})                  // set right again
	if _, ok := d.lookup(ahead, now+skew+window-1); !ok {
		t.Errorf("the id added ahead is forgotten within a window of the clock's return")
	}
	d.add(hashID("k", "x"), seen{seq: 3, at: now + skew + window})
	if _, ok := d.lookup(ahead, now+skew+window); ok || d.len() != 1 {
		t.Errorf("a window after the clock's return the id added ahead is still held (%d ids, want 1)", d.len())
	}

	d = newDedupSet(time.Hour, 1000)
	d.add(late, seen{seq: 1, at: now + skew})
	d.add(ahead, seen{seq: 2, at: now}) // received before, added after
	if _, ok := d.lookup(late, now+skew+window-1); !ok {
		t.Errorf("an id added out of order by %d ms is forgotten before its window ends", skew)
	}
}

// TestDedupSet_Model checks the dedup set against a dumb model (a map of
// arrival times, evicting the oldest live id, first added first, while over
// max) with random adds, repeats and expiries.
func TestDedupSet_Model(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	const window, maxIDs = 50, 20
	d := newDedupSet(window*time.Millisecond, maxIDs)
	type arrival struct{ at, n int64 }
	model := map[msgHash]arrival{} // the live ids
	var now int64
	for step := range 5000 {
		now += int64(rng.IntN(3))
		h := hashID("k", fmt.Sprint(rng.IntN(60)))
		_, got := d.lookup(h, now)
		a, ok := model[h]
		want := ok && now-a.at < window
		if got != want {
			t.Fatalf("seed %d step %d: lookup %v, model %v", seed, step, got, want)
		}
		if got {
			continue
		}
		d.add(h, seen{seq: uint64(step), at: now})
		model[h] = arrival{now, int64(step)}
		for k, a := range model {
			if now-a.at >= window {
				delete(model, k)
			}
		}
		for len(model) > maxIDs {
			var oldest msgHash
			first := true
			for k, a := range model {
				if o := model[oldest]; first || a.at < o.at || a.at == o.at && a.n < o.n {
					oldest, first = k, false
				}
			}
			delete(model, oldest)
		}
		if d.len() != len(model) {
			t.Fatalf("seed %d step %d: %d ids, model %d", seed, step, d.len(), len(model))
		}
	}
}

// TestDedup_RepeatInBatch_SmallSet checks that a repeat within one batch
// is dropped even when dedup.max.ids is smaller than the batch.
func TestDedup_RepeatInBatch_SmallSet(t *testing.T) {
	h := start(t, map[string]string{"dedup.max.ids": "1"}, nil)
	wantStatus(t, h.post("/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E","messageId":"a"},{"type":"track","userId":"u","event":"E","messageId":"b"},{"type":"track","userId":"u","event":"E","messageId":"a"}]}`, auth), 200)
	if got := messageIDs(t, h.records()); got != "a,b" {
		t.Errorf("records %s, want a,b", got)
	}
}
