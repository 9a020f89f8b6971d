package httptrack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParsePosition feeds arbitrary stored positions, as the worker hands
// them back on restart or a PATCH of the connector's offsets sets them, to
// parsePosition. Its fast path must read exactly what encoding/json reads;
// errors name the position; what parses encodes back to a position that
// parses to the same seq.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{`{"seq":0}`, `{"seq":1}`, `{"seq":18446744073709551615}`, `{"seq":18446744073709551616}`,
		`{"seq":01}`, `{"seq":-1}`, `{"seq":1.0}`, `{"seq":1e3}`, `{"seq":null}`, `{}`, `null`, `{"seq":1,"seq":2}`,
		`{"seq": 7}`, `{"SEQ":3}`, `{"seq":"4"}`, "", `{"seq":}`} {
		f.Add([]byte(s))
	}
	f.Add([]byte(position(42)))
	f.Fuzz(func(t *testing.T, pos []byte) {
		seq, err := parsePosition(pos)
		var ref struct {
			Seq *uint64 `json:"seq"`
		}
		refErr := json.Unmarshal(pos, &ref)
		if refErr == nil && ref.Seq == nil {
			refErr = fmt.Errorf("no seq")
		}
		if (err == nil) != (refErr == nil) {
			t.Fatalf("parsePosition(%q) = %d, %v; encoding/json reads %v", pos, seq, err, refErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "position ") {
				t.Fatalf("parsePosition(%q): error %q does not name the position", pos, err)
			}
			return
		}
		if seq != *ref.Seq {
			t.Fatalf("parsePosition(%q) = %d, encoding/json reads %d", pos, seq, *ref.Seq)
		}
		if back, err := parsePosition(position(seq)); err != nil || back != seq {
			t.Fatalf("position(%d) = %q parses to %d, %v", seq, position(seq), back, err)
		}
	})
}

// FuzzLoadJournal writes arbitrary bytes as the dedup journal and loads it,
// as Open does after a crash. Loading never panics; a file without the
// magic is refused with an error naming it; otherwise the set holds only
// ids of entries up to maxSeq, the file is rewritten so that loading it
// again drops nothing and rebuilds the same set, and the journal takes new
// entries.
func FuzzLoadJournal(f *testing.F) {
	now := time.UnixMilli(1_700_000_000_000).UnixMilli()
	var good []byte
	good = append(good, journalMagic...)
	for seq := uint64(1); seq <= 4; seq++ {
		hs := []msgHash{hashID("key", fmt.Sprint("m", seq)), hashID("key", fmt.Sprint("n", seq))}
		good = appendJournalEntry(good, seq, now-int64(seq)*1000, hs)
	}
	f.Add(good, uint64(100))
	f.Add(good, uint64(2))
	f.Add(good[:len(good)-5], uint64(100))
	f.Add(append(good[:len(good):len(good)], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), uint64(100))
	flipped := []byte(string(good))
	flipped[len(journalMagic)+12] ^= 1
	f.Add(flipped, uint64(100))
	f.Add([]byte(journalMagic), uint64(0))
	f.Add([]byte("TRHTDJ0\n"), uint64(0))
	f.Add([]byte{}, uint64(0))
	f.Add(appendJournalEntry([]byte(journalMagic), 1, now+1<<40, []msgHash{hashID("k", "future")}), uint64(5))
	f.Add(appendJournalEntry([]byte(journalMagic), 1, -1<<63, []msgHash{hashID("k", "past")}), uint64(5))
	f.Fuzz(func(t *testing.T, data []byte, maxSeq uint64) {
		path := filepath.Join(t.TempDir(), "dedup.journal")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d := newDedupSet(time.Hour, 1000)
		j, _, err := loadJournal(path, d, maxSeq, now)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("loadJournal: error %q does not name the file", err)
			}
			return
		}
		for h, s := range d.ids {
			if s.seq > maxSeq {
				t.Fatalf("id %x kept with seq %d > maxSeq %d", h, s.seq, maxSeq)
			}
		}
		if err := j.write(appendJournalEntry(nil, maxSeq, now, []msgHash{hashID("key", "after")})); err != nil {
			t.Fatal(err)
		}
		if err := j.close(); err != nil {
			t.Fatal(err)
		}
		d2 := newDedupSet(time.Hour, 1000)
		j2, rec, err := loadJournal(path, d2, maxSeq, now)
		if err != nil || rec.dropped != 0 {
			t.Fatalf("reloading the rewritten journal: %v, %v", err, rec)
		}
		defer j2.close()
		d.add(hashID("key", "after"), seen{seq: maxSeq, at: now})
		if d2.len() != d.len() {
			t.Fatalf("reloading the rewritten journal holds %d ids, the first load and the new entry %d", d2.len(), d.len())
		}
		for h, s := range d.ids {
			if s2, ok := d2.ids[h]; !ok || s2 != s {
				t.Fatalf("id %x: %+v after the first load, %+v, %v after reloading", h, s, s2, ok)
			}
		}
	})
}
