package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	tlog "github.com/tributary-io/tributary/log"
)

// produceClient appends records (kcat -P).
type produceClient interface {
	DescribeTopic(ctx context.Context, name string) (tlog.TopicDescription, error)
	// Partitions returns the partition count of topic. With create, a
	// topic that does not exist is first created with the log's defaults
	// (Kafka's auto.create.topics.enable).
	Partitions(ctx context.Context, topic string, create bool) (int, error)
	// Append appends recs to one partition, in order, and returns the
	// offset of the first once all are durable. The log stores them as
	// record batches of at most the topic's max.message.bytes. It is
	// called concurrently for different partitions, never for the same.
	Append(ctx context.Context, topic string, partition int32, recs []tlog.Record) (int64, error)
}

type produceOptions struct {
	keyDelim    string
	key         string
	keySet      bool
	headers     []string
	nullEmpty   bool
	partition   int32
	appendBytes int
	quiet       bool
}

func newProduceCmd(a *app) *cobra.Command {
	var o produceOptions
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append lines from stdin to a topic, one record per line (like kcat -P)",
		Long: `Read records from stdin, one per line (the newline is not part of the
record; empty lines are skipped), and append them to TOPIC. A topic that does
not exist is created with one partition.

Without -p, records with a key go to the partition Kafka's Java client picks
(murmur2 of the key), and records without a key stick to one partition per
append. Records keep their input order within each partition.

Appends are group commits: while one append of a partition is being written
and fsync'ed, the lines read meanwhile gather into the next one (up to
--append-bytes), and all partitions append at the same time. So a fast disk
gets small, frequent appends and a slow one large ones, and every record is
durable before it is counted. The count of records acknowledged is printed
to stderr at the end, also after an error. It counts every record the log
acknowledged: an error or an interrupt starts no further append, but waits
for those already started (one partition's failure does not abandon another
partition's append that is already written).`,
		Example: `  seq 1 1000 | tributary produce numbers
  printf 'user-1:{"plan":"pro"}\nuser-2:{"plan":"free"}\n' | tributary produce users -K :
  tributary produce web.tracking -H source=import -k batch-7 < events.jsonl`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.keySet = changed(cmd.Flags(), "key")
			return runProduce(cmd, a, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.keyDelim, "key-delimiter", "K", "", "split each line into key and value at the first DELIM (lines without it have no key)")
	f.StringVarP(&o.key, "key", "k", "", "key for every record without one from -K")
	f.StringArrayVarP(&o.headers, "header", "H", nil, "add header name=value to every record (repeatable)")
	f.BoolVarP(&o.nullEmpty, "null", "Z", false, "with -K, send an empty key or value as null (a tombstone when the value is empty)")
	f.Int32VarP(&o.partition, "partition", "p", -1, "append every record to this partition; -1 picks by key as Kafka's partitioner does")
	f.IntVar(&o.appendBytes, "append-bytes", 8<<20, "about the most bytes of records per append to one partition")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "do not print the count of acknowledged records")
	return cmd
}

func runProduce(cmd *cobra.Command, a *app, topic string, o produceOptions) error {
	path := cmd.CommandPath()
	switch {
	case o.appendBytes < 1:
		return usageErrorf(path, "--append-bytes %d: need at least 1", o.appendBytes)
	case o.partition < -1:
		return usageErrorf(path, "-p %d: partitions are numbered from 0", o.partition)
	}
	headers, err := parseHeaders(path, o.headers)
	if err != nil {
		return err
	}
	if err := tlog.ValidateTopicName(topic); err != nil {
		return err
	}
	c, err := a.openOrCreate()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	p, err := newProducer(ctx, c, topic, o, headers)
	if err != nil {
		// Nothing was appended: say so, as after any other error, so
		// that a script reading the count knows where to resume.
		if !o.quiet {
			fmt.Fprintf(a.stderr, "%% 0 records acknowledged to %s\n", topic)
		}
		return withHint(err, topic)
	}
	err = p.run(a.stdin)
	if !o.quiet {
		fmt.Fprintf(a.stderr, "%% %d records acknowledged to %s\n", p.acked.Load(), topic)
	}
	return withHint(err, topic)
}

// parseHeaders parses -H name=value flags; a header without '=' has a null
// value, as in kcat.
func parseHeaders(cmdPath string, hs []string) ([]tlog.Header, error) {
	out := make([]tlog.Header, 0, len(hs))
	for _, h := range hs {
		name, value, ok := strings.Cut(h, "=")
		if name == "" {
			return nil, usageErrorf(cmdPath, "-H %q: want name=value", h)
		}
		hdr := tlog.Header{Key: name}
		if ok {
			hdr.Value = []byte(value)
		}
		out = append(out, hdr)
	}
	return out, nil
}

// producer turns lines into records and appends them: one sender goroutine
// per partition appends in order, while the goroutine calling run reads
// input and fills the next group of records of every partition (group
// commit: a group is handed over whenever its sender is free, or blocks the
// reader when it is full). One more goroutine reads stdin in chunks.
type producer struct {
	c        produceClient
	topic    string
	o        produceOptions
	headers  []tlog.Header
	hdrSize  int
	fixedKey []byte
	delim    []byte

	parts  []*partQueue
	sticky int32 // partition of records without a key

	// ctx ends on the first failure or when the caller's context ends: no
	// append starts after that. appendCtx is what appends run with: it ends
	// with neither, because an append that started may already be written
	// (in the log, soon fsync'ed) and must be waited for, so that the count
	// of acknowledged records is exact and a retry of the rest duplicates
	// nothing.
	ctx       context.Context
	cancel    context.CancelCauseFunc
	appendCtx context.Context
	wg        sync.WaitGroup
	idle      chan struct{} // a sender finished an append (buffered 1)
	acked     atomic.Int64
}

// partQueue is one partition: the group being filled (owned by run's
// goroutine) and the hand-over to its sender.
type partQueue struct {
	id  int32
	ch  chan *recordGroup // unbuffered: a send succeeds when the sender waits
	cur *recordGroup

	lastCount, lastBytes int // size of the last group handed over
}

// recordGroup is the records of one append.
type recordGroup struct {
	recs  []tlog.Record
	arena []byte // keys and values of recs
	size  int    // estimated encoded size
}

const (
	recordOverhead = 24 // varints and attributes of one record, at most
	headerOverhead = 10
	chunkSize      = 256 << 10
)

func newProducer(ctx context.Context, c produceClient, topic string, o produceOptions, headers []tlog.Header) (*producer, error) {
	n, err := c.Partitions(ctx, topic, true)
	if err != nil {
		return nil, fmt.Errorf("produce to %s: %w", topic, err)
	}
	if o.partition >= int32(n) {
		return nil, fmt.Errorf("produce to %s: %w: -p %d, but the topic has %d partition(s) (0-%d); add some with `tributary topics alter %s --partitions N`",
			topic, tlog.ErrUnknownPartition, o.partition, n, n-1, topic)
	}
	p := &producer{c: c, topic: topic, o: o, headers: headers, idle: make(chan struct{}, 1)}
	for _, h := range headers {
		p.hdrSize += len(h.Key) + len(h.Value) + headerOverhead
	}
	if o.keySet {
		p.fixedKey = []byte(o.key)
	}
	if o.keyDelim != "" {
		p.delim = []byte(o.keyDelim)
	}
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	p.appendCtx = context.WithoutCancel(ctx)
	p.parts = make([]*partQueue, n)
	for i := range p.parts {
		q := &partQueue{id: int32(i), ch: make(chan *recordGroup)}
		p.parts[i] = q
		p.wg.Add(1)
		go p.sender(q)
	}
	p.sticky = int32(time.Now().UnixNano() % int64(n))
	return p, nil
}

// chunk is a piece of stdin as one read returned it.
type chunk struct {
	data []byte
	err  error
}

// run reads r to the end, appends every line and waits for all appends.
// It returns the first error; records acknowledged before it are counted.
func (p *producer) run(r io.Reader) error {
	defer p.cancel(nil)
	chunks := make(chan chunk, 8)
	free := make(chan []byte, 10)
	// The reader may stay blocked in r.Read after a failure or a signal
	// (stdin cannot be interrupted); the process exits soon after.
	go readChunks(p.ctx, r, chunks, free)

	err := p.readLines(chunks, free)
	if err == nil {
		for _, q := range p.parts {
			if q.cur != nil {
				if err = p.handOver(q); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		p.fail(err)
	}
	for _, q := range p.parts {
		close(q.ch)
	}
	p.wg.Wait()
	return p.failure()
}

// readLines splits the input into lines and turns them into records.
func (p *producer) readLines(chunks <-chan chunk, free chan<- []byte) error {
	var carry []byte // a line that spans chunks
	for {
		var ch chunk
		select {
		case ch = <-chunks:
		default:
			// Nothing more to read right now: hand over what we have, so
			// that slow input (a terminal, a trickling pipe) is not held
			// back; wait for input or for a sender to become free.
			for {
				var idle <-chan struct{}
				if p.offerAll() {
					idle = p.idle
				}
				select {
				case ch = <-chunks:
				case <-idle:
					continue
				case <-p.ctx.Done():
					return p.failure()
				}
				break
			}
		}
		data := ch.data
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				carry = append(carry, data...)
				break
			}
			line := data[:i]
			if len(carry) > 0 {
				carry = append(carry, line...)
				line = carry
			}
			if err := p.line(line); err != nil {
				return err
			}
			carry = carry[:0]
			data = data[i+1:]
		}
		if ch.data != nil {
			select {
			case free <- ch.data[:cap(ch.data)]:
			default:
			}
		}
		switch {
		case ch.err == io.EOF:
			if len(carry) > 0 {
				return p.line(carry)
			}
			return nil
		case ch.err != nil:
			return fmt.Errorf("read stdin: %w", ch.err)
		}
	}
}

func readChunks(ctx context.Context, r io.Reader, out chan<- chunk, free <-chan []byte) {
	for {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, chunkSize)
		}
		n, err := r.Read(buf)
		if n == 0 && err == nil {
			continue
		}
		c := chunk{err: err}
		if n > 0 {
			c.data = buf[:n]
		}
		select {
		case out <- c:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// line turns one input line into a record.
func (p *producer) line(l []byte) error {
	if len(l) == 0 {
		return nil // kcat skips empty lines
	}
	var key []byte
	value := l
	keyNull, valueNull := true, false
	if p.delim != nil {
		if i := bytes.Index(l, p.delim); i >= 0 {
			key, value, keyNull = l[:i], l[i+len(p.delim):], false
			if p.o.nullEmpty {
				keyNull = len(key) == 0
				valueNull = len(value) == 0
			}
		}
	}
	if keyNull && p.fixedKey != nil {
		key, keyNull = p.fixedKey, false
	}
	part := p.sticky
	switch {
	case p.o.partition >= 0:
		part = p.o.partition
	case !keyNull:
		part = tlog.KeyPartition(key, len(p.parts))
	}
	return p.add(part, key, value, keyNull, valueNull)
}

// add appends a record to a partition's group, handing the group over
// when its sender is free and waiting for the sender when it is full.
func (p *producer) add(part int32, key, value []byte, keyNull, valueNull bool) error {
	q := p.parts[part]
	size := len(key) + len(value) + recordOverhead + p.hdrSize
	if q.cur != nil && q.cur.size+size > p.o.appendBytes {
		if err := p.handOver(q); err != nil {
			return err
		}
	}
	if q.cur == nil {
		// Size the group like the last one: under steady input each
		// group gathers about as much as the one before.
		q.cur = &recordGroup{
			recs:  make([]tlog.Record, 0, max(256, q.lastCount+q.lastCount/4)),
			arena: make([]byte, 0, max(64<<10, min(q.lastBytes+q.lastBytes/4, p.o.appendBytes), len(key)+len(value))),
		}
	}
	g := q.cur
	start := len(g.arena)
	g.arena = append(g.arena, key...)
	g.arena = append(g.arena, value...)
	rec := tlog.Record{Headers: p.headers}
	if !keyNull {
		rec.Key = g.arena[start : start+len(key) : start+len(key)]
	}
	if !valueNull {
		rec.Value = g.arena[start+len(key) : len(g.arena) : len(g.arena)]
	}
	g.recs = append(g.recs, rec)
	g.size += size
	p.offer(q)
	return nil
}

// offer hands q's group to its sender if the sender is free.
func (p *producer) offer(q *partQueue) bool {
	select {
	case q.ch <- q.cur:
		p.handedOver(q)
		return true
	default:
		return false
	}
}

// offerAll offers every waiting group; it reports whether one is left
// because its sender is busy.
func (p *producer) offerAll() (waiting bool) {
	for _, q := range p.parts {
		if q.cur != nil && !p.offer(q) {
			waiting = true
		}
	}
	return waiting
}

// handOver gives q's group to its sender, waiting until the sender is free.
func (p *producer) handOver(q *partQueue) error {
	select {
	case q.ch <- q.cur:
		p.handedOver(q)
		return nil
	case <-p.ctx.Done():
		return p.failure()
	}
}

func (p *producer) handedOver(q *partQueue) {
	q.lastCount, q.lastBytes = len(q.cur.recs), len(q.cur.arena)
	q.cur = nil
	if q.id == p.sticky && len(p.parts) > 1 {
		// Kafka's sticky partitioner: records without a key move on to
		// another partition when their batch is sent.
		p.sticky = (p.sticky + 1) % int32(len(p.parts))
	}
}

// sender appends q's groups in order until q.ch is closed.
func (p *producer) sender(q *partQueue) {
	defer p.wg.Done()
	for g := range q.ch {
		if p.ctx.Err() != nil {
			continue // failed or interrupted: drain
		}
		if _, err := p.c.Append(p.appendCtx, p.topic, q.id, g.recs); err != nil {
			p.fail(fmt.Errorf("partition %d: %w", q.id, err))
			continue
		}
		p.acked.Add(int64(len(g.recs)))
		select {
		case p.idle <- struct{}{}:
		default:
		}
	}
}

func (p *producer) fail(err error) { p.cancel(err) }

// failure returns the first error of the run (the caller's context ending
// counts), nil if there was none.
func (p *producer) failure() error {
	if p.ctx.Err() == nil {
		return nil
	}
	return context.Cause(p.ctx)
}
