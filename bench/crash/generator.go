package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	genTopic      = "gen"
	genPartitions = 3
	genGroup      = "gen-file"
)

// generator runs generator → gen → file sink (with metadata). Invariant
// (b): the generator skips no seq (the topic holds every seq from 1 to its
// highest), its stored position is never ahead of the topic, every record
// below the sink group's committed offset is in the file, and the file has
// no gap in any partition's offsets.
type generator struct {
	s    *soak
	rate int
	out  string

	// what the checks have read so far
	next    [genPartitions]int64
	topic   [genPartitions][]int64 // offset → seq
	seqs    []int32                // seq → copies in the topic (index seq)
	gaps    map[int64]int          // seq missing below the highest → round first seen
	filePos int64                  // bytes of the file checked
	fileTop [genPartitions]int64   // offsets in the file: 0..fileTop-1, each at least once
	fileN   int
}

func newGenerator(s *soak) scenario {
	return &generator{s: s, rate: 4000, gaps: map[int64]int{}, out: filepath.Join(s.dir, "out", "gen.jsonl")}
}

func (g *generator) pipeline() string {
	return fmt.Sprintf(`version: 1
name: soak-generator
log: {backend: embedded, dir: %s}
topics:
  - {name: %s, partitions: %d, config: {segment.bytes: 262144}}
sources:
  - name: gen
    connector: generator
    topic: %s
    config: {rate: %d, seed: %d, batch.size: 200}
sinks:
  - name: %s
    connector: file
    topics: [%s]
    group: %s
    config: {path: %s, include.metadata: true}
`, g.s.dataDir, genTopic, genPartitions, genTopic, g.rate, g.s.seed%1_000_000, genGroup, genTopic, genGroup, g.out)
}

func (g *generator) startLoad(context.Context, int) {}
func (g *generator) stopLoad()                      {}
func (g *generator) between(context.Context, int)   {}

// finish lets the sink catch up for a moment under the running generator.
func (g *generator) finish(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
}

func (g *generator) check(ctx context.Context, round int) int {
	if !g.s.hasTopic(ctx, genTopic) {
		return 0
	}
	// The topic: new records since the last check.
	for p := range genPartitions {
		err := g.s.consume(ctx, genTopic, p, g.next[p], func(off int64, v []byte) {
			if off != int64(len(g.topic[p])) {
				g.s.violate(round, "(c) %s [%d]: offset %d read after %d", genTopic, p, off, len(g.topic[p])-1)
			}
			g.next[p] = off + 1
			var e struct {
				Seq int64 `json:"seq"`
			}
			if err := json.Unmarshal(v, &e); err != nil || e.Seq < 1 {
				g.s.violate(round, "(b) %s [%d] offset %d has no seq: %.200s", genTopic, p, off, v)
				g.topic[p] = append(g.topic[p], 0)
				return
			}
			g.topic[p] = append(g.topic[p], e.Seq)
			for int64(len(g.seqs)) <= e.Seq {
				g.seqs = append(g.seqs, 0)
			}
			g.seqs[e.Seq]++
		})
		if err != nil {
			g.s.violate(round, "(c) read %s [%d] from offset %d: %v", genTopic, p, g.next[p], err)
		}
	}
	// No seq skipped: 1..max all in the topic. A kill can cut a batch
	// spread over partitions (a later seq in one, an earlier one missing
	// in another); the generator makes the seqs after its stored position
	// again, so a gap above the stored position must be filled later (by
	// the final check), one below it is lost.
	maxSeq := int64(len(g.seqs) - 1)
	stored, haveStored := g.storedSeq(ctx, round)
	if haveStored && stored > maxSeq {
		g.s.violate(round, "(b) the stored position of source gen is seq %d, but the topic ends at seq %d: seqs %d..%d were never stored and will never be made again",
			stored, maxSeq, maxSeq+1, stored)
	}
	dups := 0
	for seq := int64(1); seq <= maxSeq; seq++ {
		switch n := g.seqs[seq]; {
		case n == 0:
			if _, ok := g.gaps[seq]; !ok {
				g.gaps[seq] = round
			}
		case n > 1:
			dups += int(n) - 1
		}
	}
	var lost []string
	for seq, r := range g.gaps {
		switch {
		case g.seqs[seq] > 0:
			delete(g.gaps, seq)
		case haveStored && seq <= stored || round == 0:
			lost = append(lost, fmt.Sprintf("%d (missing since round %d)", seq, r))
			g.seqs[seq] = -1 << 20 // report once
			delete(g.gaps, seq)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		g.s.violate(round, "(b) %d seqs are not in the topic though the stored position (seq %d) or the final run is past them: %s",
			len(lost), stored, strings.Join(lost[:min(10, len(lost))], ", "))
	}
	// The file: new complete lines since the last check.
	g.readFile(round)
	// Every record below the committed offset is in the file.
	committed := g.committed(ctx, round)
	for p := range genPartitions {
		c, ok := committed[p]
		if !ok {
			continue
		}
		if c > int64(len(g.topic[p])) {
			g.s.violate(round, "(b) group %s committed offset %d on %s [%d], past its end %d", genGroup, c, genTopic, p, len(g.topic[p]))
		}
		if c > g.fileTop[p] {
			g.s.violate(round, "(b) group %s committed offset %d on %s [%d], but the file has only offsets below %d: %d delivered records are missing from %s",
				genGroup, c, genTopic, p, g.fileTop[p], c-g.fileTop[p], g.out)
			g.fileTop[p] = c // report once
		}
	}
	fmt.Printf("    generator: topic seqs 1..%d (%d duplicates, %d missing for now), stored seq %d, committed %v, file %d lines, file offsets below %v\n",
		maxSeq, dups, len(g.gaps), stored, committed, g.fileN, g.fileTop)
	return int(maxSeq) + g.fileN
}

// readFile checks the lines the file gained: each is a record of the topic
// with its seq, and each partition's offsets come without a gap (a line
// may repeat one delivered before: at least once).
func (g *generator) readFile(round int) {
	f, err := os.Open(g.out)
	if err != nil {
		if !os.IsNotExist(err) {
			g.s.violate(round, "(b) open %s: %v", g.out, err)
		}
		return
	}
	defer f.Close()
	if _, err := f.Seek(g.filePos, io.SeekStart); err != nil {
		g.s.violate(round, "(b) seek %s: %v", g.out, err)
		return
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return // EOF, or a torn last line: not acknowledged, cut at the next open
		}
		pos := g.filePos
		g.filePos += int64(len(line))
		g.fileN++
		var e struct {
			Topic     string `json:"topic"`
			Partition int    `json:"partition"`
			Offset    int64  `json:"offset"`
			Value     struct {
				Seq int64 `json:"seq"`
			} `json:"value"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil || e.Topic != genTopic || e.Partition < 0 || e.Partition >= genPartitions {
			g.s.violate(round, "(b) %s byte %d: not a line of the sink: %.200q", g.out, pos, line)
			continue
		}
		p := e.Partition
		if e.Offset > g.fileTop[p] {
			g.s.violate(round, "(b) %s byte %d: %s [%d] offset %d follows offset %d: offsets %d..%d skipped",
				g.out, pos, genTopic, p, e.Offset, g.fileTop[p]-1, g.fileTop[p], e.Offset-1)
		}
		if e.Offset >= g.fileTop[p] {
			g.fileTop[p] = e.Offset + 1
		}
		if e.Offset < int64(len(g.topic[p])) && g.topic[p][e.Offset] != e.Value.Seq {
			g.s.violate(round, "(b) %s byte %d: %s [%d] offset %d has seq %d, the topic seq %d",
				g.out, pos, genTopic, p, e.Offset, e.Value.Seq, g.topic[p][e.Offset])
		}
	}
}

// committed reads the sink group's committed offsets (groups describe).
func (g *generator) committed(ctx context.Context, round int) map[int]int64 {
	out, err := g.s.cli(ctx, nil, "groups", "describe", genGroup)
	res := map[int]int64{}
	if err != nil {
		if !strings.Contains(string(out), "not") { // a group not there yet
			g.s.violate(round, "(d) groups describe %s: %v\n%s", genGroup, err, out)
		}
		return res
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != genGroup || f[1] != genTopic {
			continue
		}
		p, err1 := strconv.Atoi(f[2])
		c, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 == nil && err2 == nil {
			res[p] = c
		}
	}
	return res
}

// storedSeq reads the generator's last stored position from the offsets
// topic.
func (g *generator) storedSeq(ctx context.Context, round int) (int64, bool) {
	if !g.s.hasTopic(ctx, "_tributary.offsets") {
		return 0, false
	}
	var last int64
	found := false
	err := g.s.consume(ctx, "_tributary.offsets", 0, 0, func(off int64, v []byte) {
		var pos struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(v, &pos) == nil && pos.Seq > 0 {
			last, found = pos.Seq, true
		}
	})
	if err != nil {
		g.s.violate(round, "(c) read _tributary.offsets: %v", err)
	}
	return last, found
}
