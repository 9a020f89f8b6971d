package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
)

// consumeClient reads records and tracks a group's position (kcat -C).
type consumeClient interface {
	DescribeTopic(ctx context.Context, name string) (tlog.TopicDescription, error)
	// Offsets returns a partition's log start offset and its end (the
	// offset the next record will get).
	Offsets(ctx context.Context, topic string, partition int32) (start, end int64, err error)
	// OffsetForTime returns the first offset whose timestamp is at or
	// after t; found is false (and offset the end) when none is.
	OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (offset int64, found bool, err error)
	// Read returns records from offset on; at the end of the partition it
	// waits up to opts.MaxWait for more. It is called concurrently, one
	// caller per partition.
	Read(ctx context.Context, topic string, partition int32, offset int64, opts tlog.ReadOptions) (tlog.ReadResult, error)
	// CommittedOffset returns the offset a group will read next in a
	// partition, if the group committed one.
	CommittedOffset(ctx context.Context, group, topic string, partition int32) (int64, bool, error)
	// Commit stores a group's offsets durably.
	Commit(ctx context.Context, group string, offsets []tlog.OffsetCommit) error
}

type consumeOptions struct {
	offsets   []string
	partition int32
	count     int64
	exitAtEnd bool
	format    string
	json      bool
	group     string
	keyDelim  string
	null      bool
	quiet     bool
}

func newConsumeCmd(a *app) *cobra.Command {
	var o consumeOptions
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic (like kcat -C)",
		Long: `Print the records of TOPIC to stdout, by default each value followed by a
newline, reading every partition at once (the order within a partition is
kept). Without -e it keeps waiting for new records until interrupted.

Start offsets (-o), per partition:
  beginning   the oldest record still stored (the default)
  end         only records appended from now on
  stored      the group's committed offset (needs -g; the oldest when none)
  N           offset N (clamped to what the partition holds)
  -N          N records before the end of each partition
  s@UNIXMS    the first record with a timestamp at or after UNIXMS
  e@UNIXMS    stop before the first record at or after UNIXMS (give it
              as a second -o, beside one of the above); without -e,
              wait for such a record as kcat does

-f formats use kcat's fields: %s value, %S value size, %k key, %K key size
(-1 for null), %t topic, %p partition, %o offset, %T timestamp in ms,
%h headers as name=value,..., %% a percent sign, and \n \t \r escapes.

With -g GROUP the records are read as the group: from its committed offsets
(unless -o says otherwise; the oldest offset where it has none), committing
the position after the last record printed, after every printed batch and at
exit (also on Ctrl-C).`,
		Example: `  tributary consume web.tracking -o -5 -e        # the last five of each partition
  tributary consume users -f '%k => %s (partition %p, offset %o)\n' -e
  tributary consume orders -J -c 10
  tributary consume orders -g billing              # follow as group billing`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, a, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.offsets, "offset", "o", nil, "where to start: beginning, end, stored, N, -N, s@UNIXMS; and where to stop: e@UNIXMS")
	f.Int32VarP(&o.partition, "partition", "p", -1, "read only this partition; -1 reads them all")
	f.Int64VarP(&o.count, "count", "c", 0, "exit after printing this many records in total")
	f.BoolVarP(&o.exitAtEnd, "exit", "e", false, "exit once every partition has been read to its end")
	f.StringVarP(&o.format, "format", "f", "", "output format (see above); default %s\\n")
	f.BoolVarP(&o.json, "json", "J", false, "print each record as a JSON object: topic, partition, offset, tstype, ts, headers, key, payload")
	f.StringVarP(&o.group, "group", "g", "", "read as this consumer group and commit what was printed")
	f.StringVarP(&o.keyDelim, "key-delimiter", "K", "", "print the key, DELIM, then the value (the default format: not with -f or -J)")
	f.BoolVarP(&o.null, "null", "Z", false, "print empty or null keys and values as NULL")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "do not print end-of-partition notices to stderr")
	return cmd
}

// offsetSpec is a parsed -o start.
type offsetSpec struct {
	kind string // "beginning", "end", "stored", "abs", "rel", "time"
	n    int64
	t    time.Time
}

func parseOffsets(cmdPath string, vals []string, group string) (start offsetSpec, stop *time.Time, err error) {
	start = offsetSpec{kind: "beginning"}
	if group != "" {
		start.kind = "stored"
	}
	seen := false
	bad := func(v, why string) error {
		return usageErrorf(cmdPath, "-o %q: %s (want beginning, end, stored, N, -N, s@UNIXMS or e@UNIXMS)", v, why)
	}
	for _, v := range vals {
		if ms, ok := strings.CutPrefix(v, "e@"); ok {
			n, err := strconv.ParseInt(ms, 10, 64)
			if err != nil {
				return start, nil, bad(v, "not a timestamp in milliseconds")
			}
			if stop != nil {
				return start, nil, bad(v, "only one stop offset (e@) may be given")
			}
			t := time.UnixMilli(n)
			stop = &t
			continue
		}
		if seen {
			return start, nil, bad(v, "only one start offset may be given")
		}
		seen = true
		switch {
		case v == "beginning" || v == "end" || v == "stored":
			start = offsetSpec{kind: v}
		case strings.HasPrefix(v, "s@"):
			n, err := strconv.ParseInt(v[2:], 10, 64)
			if err != nil {
				return start, nil, bad(v, "not a timestamp in milliseconds")
			}
			start = offsetSpec{kind: "time", t: time.UnixMilli(n)}
		default:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return start, nil, bad(v, "unknown offset")
			}
			if n < 0 || strings.HasPrefix(v, "-") {
				start = offsetSpec{kind: "rel", n: -n}
			} else {
				start = offsetSpec{kind: "abs", n: n}
			}
		}
	}
	if start.kind == "stored" && group == "" {
		return start, nil, usageErrorf(cmdPath, "-o stored needs a group: add -g GROUP")
	}
	return start, stop, nil
}

// consumer prints one topic's records. The goroutine that calls run owns
// the output and the group's positions; one fetcher goroutine per
// partition reads ahead into fetches.
type consumer struct {
	c      consumeClient
	a      *app
	topic  string
	o      consumeOptions
	format recordFormatter
	out    *bufio.Writer
}

// fetch is what a fetcher read from one partition.
type fetch struct {
	part  int32
	recs  []tlog.Record
	next  int64 // offset after recs (past skipped control batches too)
	atEnd bool  // next had reached the partition's end when read
	done  bool  // the fetcher stopped: end reached with -e, or e@ passed
	err   error
}

const (
	fetchMaxBytes = 1 << 20
	fetchMaxWait  = 5 * time.Second
	commitEvery   = time.Second
)

func runConsume(cmd *cobra.Command, a *app, topic string, o consumeOptions) error {
	path := cmd.CommandPath()
	start, stop, err := parseOffsets(path, o.offsets, o.group)
	if err != nil {
		return err
	}
	if o.json && o.format != "" {
		return usageErrorf(path, "-J and -f both set the output; give one")
	}
	if o.keyDelim != "" && (o.json || o.format != "") {
		if o.json {
			return usageErrorf(path, "-K sets the key delimiter of the default format, which -J replaces; drop -K: -J prints the key in its \"key\" field")
		}
		return usageErrorf(path, "-K sets the key delimiter of the default format, which -f replaces; give one (with -f, write the key as %%k: -f '%%k%s%%s\\n')", strings.ReplaceAll(o.keyDelim, "%", "%%"))
	}
	if o.count < 0 {
		return usageErrorf(path, "-c %d: want a positive count", o.count)
	}
	if o.partition < -1 {
		return usageErrorf(path, "-p %d: partitions are numbered from 0; -1 (the default) reads them all", o.partition)
	}
	var tf *textFormatter
	if !o.json {
		f := o.format
		if f == "" {
			f = "%s\\n"
			if o.keyDelim != "" {
				f = "%k" + strings.ReplaceAll(o.keyDelim, "%", "%%") + "%s\\n"
			}
		}
		if tf, err = parseFormat(f); err != nil {
			return usageErrorf(path, "-f: %v", err)
		}
		if o.null {
			tf.nullStr = []byte("NULL")
		}
	}
	c, err := a.open()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if err := checkGroupFree(ctx, c, o.group); err != nil {
		return err
	}
	d, err := c.DescribeTopic(ctx, topic)
	if err != nil {
		return withHint(err, topic)
	}
	var parts []int32
	if o.partition >= 0 {
		if int(o.partition) >= len(d.Partitions) {
			return fmt.Errorf("%w: topic %s has no partition %d (it has %d: 0-%d)", tlog.ErrUnknownPartition, topic, o.partition, len(d.Partitions), len(d.Partitions)-1)
		}
		parts = []int32{o.partition}
	} else {
		for i := range d.Partitions {
			parts = append(parts, int32(i))
		}
	}
	cs := &consumer{c: c, a: a, topic: topic, o: o, out: bufio.NewWriterSize(a.stdout, 64<<10)}
	if o.json {
		tstype := "create"
		if d.Config[tlog.ConfigTimestampType] == "LogAppendTime" {
			tstype = "logappend"
		}
		cs.format = newJSONFormatter(tstype)
	} else {
		cs.format = tf
	}
	return cs.run(ctx, parts, start, stop)
}

// readPlan says where a fetcher starts reading a partition and where it
// stops.
type readPlan struct {
	from int64
	// until is the offset to stop before (-1: none): the first record at
	// or after the e@ time, when the partition had one at the start.
	until int64
	// stopAt, when set, stops before the first record read whose
	// timestamp is at or after it: the e@ time, when no record was that
	// late at the start, so the partition is followed until one is (as
	// kcat does).
	stopAt *time.Time
}

// position plans the reading of a partition from start until stop (nil:
// never).
func (cs *consumer) position(ctx context.Context, part int32, start offsetSpec, stop *time.Time) (readPlan, error) {
	plan, err := cs.startOffset(ctx, part, start)
	if err != nil {
		return readPlan{}, err
	}
	if stop != nil {
		off, found, err := cs.c.OffsetForTime(ctx, cs.topic, part, *stop)
		if err != nil {
			return readPlan{}, fmt.Errorf("find offset for time in %s [%d]: %w", cs.topic, part, err)
		}
		if found {
			plan.until = off
		} else {
			plan.stopAt = stop
		}
	}
	return plan, nil
}

// startOffset returns where to start reading a partition, with no stop.
func (cs *consumer) startOffset(ctx context.Context, part int32, start offsetSpec) (readPlan, error) {
	var from int64
	first, end, err := cs.c.Offsets(ctx, cs.topic, part)
	if err != nil {
		return readPlan{}, withHint(err, cs.topic)
	}
	switch start.kind {
	case "beginning":
		from = first
	case "end":
		from = end
	case "stored":
		off, ok, err := cs.c.CommittedOffset(ctx, cs.o.group, cs.topic, part)
		if err != nil {
			return readPlan{}, fmt.Errorf("committed offset of group %s on %s [%d]: %w", cs.o.group, cs.topic, part, err)
		}
		from = first
		if ok {
			from = cs.clamp(part, off, first, end)
		}
	case "abs":
		from = cs.clamp(part, start.n, first, end)
	case "rel":
		from = max(first, end-start.n)
	case "time":
		off, _, err := cs.c.OffsetForTime(ctx, cs.topic, part, start.t)
		if err != nil {
			return readPlan{}, fmt.Errorf("find offset for time in %s [%d]: %w", cs.topic, part, err)
		}
		from = off
	}
	return readPlan{from: from, until: -1}, nil
}

func (cs *consumer) clamp(part int32, off, first, end int64) int64 {
	c := min(max(off, first), end)
	if c != off {
		cs.a.logger.Warn("offset outside the partition; starting at the nearest one",
			"topic", cs.topic, "partition", part, "offset", off, "log_start_offset", first, "log_end_offset", end, "start", c)
	}
	return c
}

func (cs *consumer) run(ctx context.Context, parts []int32, start offsetSpec, stop *time.Time) error {
	plans := make([]readPlan, len(parts))
	for i, p := range parts {
		plan, err := cs.position(ctx, p, start, stop)
		if err != nil {
			return err
		}
		plans[i] = plan
	}

	fctx, cancel := context.WithCancel(ctx)
	fetches := make(chan fetch, 2*len(parts))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs.fetchLoop(fctx, p, plans[i], fetches)
		}()
	}

	// Printed positions, and what the group has committed of them.
	pos := map[int32]int64{}
	committed := map[int32]int64{}
	atEnd := map[int32]bool{}
	lastCommit := time.Now()
	var printed int64
	active := len(parts)
	var buf []byte

	finish := func(err error) error {
		if ferr := cs.out.Flush(); ferr != nil {
			// What is still buffered was not printed: commit nothing more.
			return errors.Join(err, fmt.Errorf("write output: %w", ferr))
		}
		// Commit even when interrupted: what was printed is done.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer ccancel()
		if cerr := cs.commit(cctx, pos, committed); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return err
	}

	for active > 0 {
		var f fetch
		select {
		case f = <-fetches:
		case <-ctx.Done():
			return finish(nil) // interrupted: a normal way to stop following
		}
		if f.err != nil {
			return finish(f.err)
		}
		limit := false
		for i := range f.recs {
			r := &f.recs[i]
			buf = cs.format.appendRecord(buf[:0], r)
			if _, err := cs.out.Write(buf); err != nil {
				return finish(fmt.Errorf("write output: %w", err))
			}
			pos[f.part] = r.Offset + 1
			printed++
			if cs.o.count > 0 && printed >= cs.o.count {
				limit = true
				break
			}
		}
		if limit {
			return finish(nil)
		}
		pos[f.part] = f.next
		if len(f.recs) > 0 {
			atEnd[f.part] = false
		}
		if f.done {
			active--
		}
		if f.atEnd && !atEnd[f.part] {
			atEnd[f.part] = true
			if err := cs.out.Flush(); err != nil {
				return finish(fmt.Errorf("write output: %w", err))
			}
			if !cs.o.quiet {
				suffix := ""
				if cs.o.exitAtEnd && active == 0 {
					suffix = ": exiting"
				}
				fmt.Fprintf(cs.a.stderr, "%% Reached end of topic %s [%d] at offset %d%s\n", cs.topic, f.part, f.next, suffix)
			}
		}
		if len(fetches) == 0 {
			if err := cs.out.Flush(); err != nil {
				return finish(fmt.Errorf("write output: %w", err))
			}
		}
		if cs.o.group != "" && (len(fetches) == 0 || time.Since(lastCommit) >= commitEvery) {
			if err := cs.out.Flush(); err != nil {
				return finish(fmt.Errorf("write output: %w", err))
			}
			if err := cs.commit(ctx, pos, committed); err != nil {
				if ctx.Err() != nil {
					return finish(nil)
				}
				return finish(err)
			}
			lastCommit = time.Now()
		}
	}
	return finish(nil)
}

// commit stores the printed positions that moved since the last commit.
func (cs *consumer) commit(ctx context.Context, pos, committed map[int32]int64) error {
	if cs.o.group == "" {
		return nil
	}
	var offs []tlog.OffsetCommit
	now := time.Now()
	for p, off := range pos {
		if c, ok := committed[p]; ok && c == off {
			continue
		}
		offs = append(offs, tlog.OffsetCommit{Topic: cs.topic, Partition: p, Offset: off, CommitTime: now})
	}
	if len(offs) == 0 {
		return nil
	}
	if err := cs.c.Commit(ctx, cs.o.group, offs); err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", cs.o.group, err)
	}
	for _, o := range offs {
		committed[o.Partition] = o.Offset
	}
	return nil
}

// fetchLoop reads one partition as plan says, or with -e until its end,
// sending what it reads to out.
func (cs *consumer) fetchLoop(ctx context.Context, part int32, plan readPlan, out chan<- fetch) {
	until := plan.until
	send := func(f fetch) bool {
		select {
		case out <- f:
			return true
		case <-ctx.Done():
			return false
		}
	}
	wait := fetchMaxWait
	if cs.o.exitAtEnd {
		wait = 0
	}
	off := plan.from
	wasAtEnd := false
	for {
		if until >= 0 && off >= until {
			send(fetch{part: part, next: off, done: true})
			return
		}
		// Wait for new records only once the end has been seen and
		// reported, so that reaching it is noticed at once.
		w := wait
		if !wasAtEnd {
			w = 0
		}
		res, err := cs.c.Read(ctx, cs.topic, part, off, tlog.ReadOptions{MaxBytes: fetchMaxBytes, MaxWait: w})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, tlog.ErrOffsetOutOfRange) && res.HighWatermark >= res.LogStartOffset {
				// Retention removed records before they were read: go on
				// from the nearest offset, as auto.offset.reset does.
				next := res.LogStartOffset
				if off > res.HighWatermark {
					next = res.HighWatermark
				}
				if next != off {
					cs.a.logger.Warn("offset no longer in the partition; skipping ahead", "topic", cs.topic, "partition", part, "offset", off, "next", next)
					off = next
					continue
				}
			}
			send(fetch{part: part, err: fmt.Errorf("read %s [%d] at offset %d: %w", cs.topic, part, off, err)})
			return
		}
		recs := res.Records
		if until >= 0 {
			for i := range recs {
				if recs[i].Offset >= until {
					recs = recs[:i]
					break
				}
			}
		}
		if plan.stopAt != nil {
			stopMs := plan.stopAt.UnixMilli()
			for i := range recs {
				if recs[i].Timestamp.UnixMilli() >= stopMs {
					// The first record at or after the stop time has
					// arrived: it is where the partition ends.
					until = recs[i].Offset
					recs = recs[:i]
					break
				}
			}
		}
		off = max(off, res.NextOffset)
		if until >= 0 && off > until {
			off = until
		}
		atEnd := off >= res.HighWatermark
		done := (cs.o.exitAtEnd && atEnd) || (until >= 0 && off >= until)
		if len(recs) > 0 || atEnd != wasAtEnd || done {
			if !send(fetch{part: part, recs: recs, next: off, atEnd: atEnd, done: done}) {
				return
			}
		}
		wasAtEnd = atEnd
		if done {
			return
		}
	}
}

// groupMembers is implemented by clients that see a group's active members
// (the REST client: a running worker's sinks and Kafka listener members).
type groupMembers interface {
	GroupMembers(ctx context.Context, group string) ([]rest.GroupMemberJSON, error)
}

// checkGroupFree refuses to consume as a group that has active members:
// the worker's sink (or a Kafka consumer) and this command would overwrite
// each other's offsets. Kafka refuses commits from outside an active group
// too.
func checkGroupFree(ctx context.Context, c consumeClient, group string) error {
	gm, ok := c.(groupMembers)
	if group == "" || !ok {
		return nil
	}
	members, err := gm.GroupMembers(ctx, group)
	if err != nil || len(members) == 0 {
		return err
	}
	m := members[0]
	if m.Connector != "" {
		return &hintError{err: tlog.ErrGroupNotEmpty, msg: fmt.Sprintf(
			"consumer group %s belongs to the running sink connector %s (member %s); consume as another group (-g), or stop the connector first and change its offsets: tributary connectors stop %s, then tributary connectors offsets %s --set …|--reset (REST: PUT /connectors/%s/stop, then PATCH|DELETE /connectors/%s/offsets)",
			group, m.Connector, m.ConsumerID, m.Connector, m.Connector, m.Connector, m.Connector)}
	}
	return &hintError{err: tlog.ErrGroupNotEmpty, msg: fmt.Sprintf(
		"consumer group %s has %d active member(s) (%s, client %s, host %s); consume as another group (-g), or stop those consumers first",
		group, len(members), m.ConsumerID, m.ClientID, m.Host)}
}
