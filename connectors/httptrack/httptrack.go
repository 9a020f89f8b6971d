package httptrack

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Name is the connector's name in pipeline files.
const Name = "httptrack"

// version is the connector's version.
const version = "0.1.0"

// idleRead is how long Read waits for a request before it returns an empty
// batch, so that the worker can heartbeat and react to pause or stop.
const idleRead = time.Second

// compactMinBytes is the smallest journal that is compacted; a variable
// for tests.
var compactMinBytes int64 = 8 << 20

// shutdownGrace bounds the drain phase of Close when its context has no
// deadline.
const shutdownGrace = 5 * time.Second

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the httptrack source.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSource,
		Version:     version,
		Description: "Receives Segment-compatible tracking events (track, identify, page, screen, group, alias, batch) over HTTP and answers 200 once they are durably in the log.",
		Spec:        spec(),
		NewSource:   func() connect.Source { return &Source{} },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "listen", Type: connect.TypeString, Default: "127.0.0.1:8088", Format: connect.FormatHostPort,
			Description: "Address to listen on, host:port; use :8088 to accept connections from other machines, port 0 for any free port."},
		{Name: "write.keys", Type: connect.TypeList, Required: true, Secret: true,
			Description: "Accepted write keys. An item key:topic routes the events of that key to its own topic; a plain key uses the source's topic."},
		{Name: "tls.cert", Type: connect.TypeString,
			Description: "PEM certificate file; with tls.key, the source serves HTTPS."},
		{Name: "tls.key", Type: connect.TypeString,
			Description: "PEM private key file of tls.cert."},
		{Name: "cors.origins", Type: connect.TypeList,
			Description: "Origins browsers may send events from (e.g. https://www.example.com), or * for any. Empty allows no cross-origin requests. A request whose Origin is not listed (nor this host's own) is refused with 403 origin_not_allowed, preflight or not; requests without an Origin (server-side SDKs) are not affected."},
		{Name: "max.message.bytes", Type: connect.TypeSize, Default: "32KiB", Min: "256B", Max: "16MiB",
			Description: "Largest message, as sent."},
		{Name: "max.batch.bytes", Type: connect.TypeSize, Default: "500KiB", Min: "256B", Max: "256MiB",
			Description: "Largest request body, after gzip decompression."},
		{Name: "max.batch.events", Type: connect.TypeInt, Default: "2500", Min: "1", Max: "1000000",
			Description: "Most messages in one batch request."},
		{Name: "dedup.window", Type: connect.TypeDuration, Default: "24h", Min: "0s",
			Description: "How long a messageId is remembered: a message whose messageId (for the same write key) arrived within the window is dropped. 0 turns dedup off."},
		{Name: "dedup.max.ids", Type: connect.TypeInt, Default: "1000000", Min: "1", Max: "100000000",
			Description: "Most messageIds remembered (about 80 bytes of memory each); the oldest are forgotten first."},
		{Name: "state.dir", Type: connect.TypeString,
			Description: "Directory for the dedup journal, which keeps the remembered messageIds across restarts. Empty keeps them in memory only."},
		{Name: "rate.limit", Type: connect.TypeFloat, Default: "0", Min: "0",
			Description: "Events per second accepted per write key, with a burst of one second; more are answered 429 with Retry-After. 0 is unlimited."},
		{Name: "trusted.proxy.header", Type: connect.TypeString,
			Description: "Header a trusted reverse proxy sets to the client address (e.g. X-Forwarded-For; its last entry is used). Empty uses the peer address."},
		{Name: "ack.timeout", Type: connect.TypeDuration, Default: "10s", Min: "1ms",
			Description: "How long a request waits for its events to be durable in the log before it is answered 503 with Retry-After (noticed within an eighth of it more, at most 1s more)."},
		{Name: "max.pending.bytes", Type: connect.TypeSize, Default: "64MiB", Min: "1KiB", Max: "1TiB",
			Description: "Most bytes of events accepted but not yet read by the worker; beyond it requests are answered 503 with Retry-After (backpressure)."},
		{Name: "read.batch.events", Type: connect.TypeInt, Default: "10000", Min: "1", Max: "10000000",
			Description: "Most events returned by one read; whole requests are never split, so a larger request is returned alone."},
	}, Check: checkSpec}
}

// writeKey is one accepted write key.
type writeKey struct {
	key   string
	topic string // "" for the source's topic
	label string // how metrics name it: "1", "2", ... by position in write.keys
}

// settings are the parsed configuration of a Source.
type settings struct {
	listen          string
	keys            map[string]writeKey
	tlsCert, tlsKey string
	corsAny         bool
	corsOrigins     map[string]bool
	lim             limits
	dedupWindow     time.Duration
	dedupMax        int
	stateDir        string
	rateLimit       float64
	proxyHeader     string
	ackTimeout      time.Duration
	maxPending      int64
	readBatch       int
}

// checkSpec checks a configuration as Open would, without listening: the
// settings, and the tls.cert and tls.key files (missing, unreadable, not
// PEM, not a pair), so that `tributary validate` and the REST validate
// endpoint report them. Open reads the files again: a renewed certificate
// is picked up when the task restarts.
func checkSpec(cfg connect.Config) error {
	set, err := parseSettings(cfg)
	if err != nil {
		return err
	}
	if set.tlsCert != "" {
		if _, err := tls.LoadX509KeyPair(set.tlsCert, set.tlsKey); err != nil {
			return connect.FieldError{Param: "tls.cert", Message: fmt.Sprintf("load %s and %s: %v; give a PEM certificate and its private key that the worker's user may read", set.tlsCert, set.tlsKey, err)}
		}
	}
	return nil
}

func parseSettings(cfg connect.Config) (settings, error) {
	var s settings
	var errs []error
	field := func(param, msg string) { errs = append(errs, connect.FieldError{Param: param, Message: msg}) }
	str := func(name string) string {
		v, err := cfg.String(name)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	size := func(name string, lo, hi int64) int64 {
		v, err := cfg.Size(name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case v < lo || v > hi:
			field(name, fmt.Sprintf("%d bytes: give %d to %d", v, lo, hi))
		}
		return min(max(v, lo), hi)
	}
	integer := func(name string, lo, hi int64) int {
		v, err := cfg.Int(name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case v < lo || v > hi:
			field(name, fmt.Sprintf("%d: give %d to %d", v, lo, hi))
		}
		return int(min(max(v, lo), hi))
	}
	duration := func(name string, lo time.Duration) time.Duration {
		v, err := cfg.Duration(name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case v < lo:
			field(name, fmt.Sprintf("%s: give at least %s", v, lo))
		}
		return max(v, lo)
	}

	s.listen = str("listen")
	keys, err := cfg.List("write.keys")
	if err != nil {
		errs = append(errs, err)
	}
	s.keys = make(map[string]writeKey, len(keys))
	for i, item := range keys {
		k, topic, _ := strings.Cut(item, ":")
		k, topic = strings.TrimSpace(k), strings.TrimSpace(topic)
		switch {
		case k == "":
			field("write.keys", fmt.Sprintf("item %d has an empty key", i+1))
		case s.keys[k].key != "":
			field("write.keys", fmt.Sprintf("item %d repeats an earlier key", i+1))
		}
		s.keys[k] = writeKey{key: k, topic: topic, label: strconv.Itoa(i + 1)}
	}
	if len(keys) == 0 && err == nil {
		field("write.keys", "give at least one write key")
	}
	s.tlsCert, s.tlsKey = str("tls.cert"), str("tls.key")
	if (s.tlsCert == "") != (s.tlsKey == "") {
		field("tls.cert", "set both tls.cert and tls.key, or neither")
	}
	origins, err := cfg.List("cors.origins")
	if err != nil {
		errs = append(errs, err)
	}
	s.corsOrigins = make(map[string]bool)
	for _, o := range origins {
		if o == "*" {
			s.corsAny = true
		}
		s.corsOrigins[strings.TrimRight(o, "/")] = true
	}
	s.lim.maxMessageBytes = int(size("max.message.bytes", 256, 16<<20))
	s.lim.maxBatchBytes = int(size("max.batch.bytes", 256, 256<<20))
	s.lim.maxBatchEvents = integer("max.batch.events", 1, 1_000_000)
	s.dedupWindow = duration("dedup.window", 0)
	s.dedupMax = integer("dedup.max.ids", 1, 100_000_000)
	s.stateDir = str("state.dir")
	rate, err := cfg.Float("rate.limit")
	switch {
	case err != nil:
		errs = append(errs, err)
	case !(rate >= 0) || math.IsInf(rate, 0):
		field("rate.limit", fmt.Sprintf("%v: give events per second, 0 (unlimited) or more", rate))
	}
	s.rateLimit = rate
	s.proxyHeader = http.CanonicalHeaderKey(str("trusted.proxy.header"))
	s.ackTimeout = duration("ack.timeout", time.Millisecond)
	s.maxPending = size("max.pending.bytes", 1<<10, 1<<40)
	s.readBatch = integer("read.batch.events", 1, 10_000_000)
	return s, errors.Join(errs...)
}

// request is one accepted request's records, waiting to be read.
type request struct {
	seq   uint64
	recs  []connect.Record
	bytes int64
}

// Source is the HTTP tracking source. Make one with Connector().NewSource
// or new(Source).
//
// Concurrency: HTTP handlers run on the server's goroutines; one goroutine
// calls Read, another may call Durable and Ack. mu guards the request
// queue, the seq counters, the dedup set and the journal buffer; the
// journal file itself is used by Read only (and by Open and Close, which
// never run with it).
type Source struct {
	// Set by Open, read-only afterwards.
	set    settings
	cfg    connect.Config
	logger *slog.Logger
	srv    *http.Server
	ln     net.Listener
	served chan struct{} // closed when Serve has returned
	// wakerDone is closed when wakeWaiters has returned.
	wakerDone chan struct{}
	closing   chan struct{} // closed when Close starts: waiting requests answer 503
	ready     chan struct{} // closed by the first Read, after RecoverTail: requests are enqueued
	limiter   *limiter
	metrics   *metrics
	journal   *journal // nil without state.dir

	closeOnce sync.Once
	closeErr  error
	readyOnce sync.Once

	recovered    recovery     // what Open cut off the dedup journal
	waiting      atomic.Int64 // HTTP requests waiting for their records to be durable
	journalBytes atomic.Int64 // size of the dedup journal file, for Report
	recoveredIDs atomic.Int64 // messageIds RecoverTail found in the log tail, for Report
	// recoveredSkipped counts the tail records RecoverTail skipped (not
	// the source's messages).
	recoveredSkipped atomic.Int64
	// answered mirrors answeredLocked() (stored under mu before any wave
	// is closed), so that a woken request checks it without taking mu.
	answered     atomic.Uint64
	reads        atomic.Int64 // Reads that returned records, for Report
	readRequests atomic.Int64 // requests those Reads returned, for Report

	mu          sync.Mutex
	queue       []*request
	queuedBytes int64
	nextSeq     uint64 // seq of the next accepted request
	// acked: every request up to this seq is durable and its position
	// stored (Ack). durable: every request up to this seq is durable in
	// the log (Durable or Ack), its position perhaps not stored yet.
	// Requests are answered 200 up to answeredLocked(): durable with dedup on,
	// else acked (see the package doc, Acknowledgement).
	acked   uint64
	durable uint64
	// handed holds the seq of the last request of each of the last
	// gatherDepth Reads, oldest first: a Read gathers while the oldest is
	// not durable.
	handed     [gatherDepth]uint64
	queuedRecs int           // records in queue
	notified   bool          // the worker calls Durable: Read may gather (see Read)
	readable   chan struct{} // holds a token when the queue became non-empty or full
	durableCh  chan struct{} // holds a token when durable advanced, for a gathering Read
	// takingNext: a Read waits with requests queued and takes them once
	// durable advances. wakeDue: answered advanced since the waiting
	// requests were last woken (see advance).
	takingNext, wakeDue bool
	// waves are what requests wait on in awaitDurable, oldest first: a
	// wave's channel is closed once every request up to its upTo is
	// answered, so that a Durable wakes the requests it answers and not
	// those still queued or on their way to the disk with the next Read.
	// The last wave, upTo maxSeq, is the open one: requests queued since
	// the last Read wait on it, and takeLocked seals it at the last seq it
	// takes. A request woken early (a wave sealed below its seq by a Read
	// that took part of the queue, or wakeAllLocked) fetches its wave
	// again (waveLocked). Every channel a request holds is in waves or
	// closed.
	waves []wave
	dedup *dedupSet // nil when dedup is off
	jbuf  []byte    // journal entries not yet written to the file
}

var (
	_ connect.Source          = (*Source)(nil)
	_ connect.DurableNotifier = (*Source)(nil)
	_ connect.LazyAcker       = (*Source)(nil)
)

// position is {"seq":N}: every request up to seq N is durable.
func position(seq uint64) connect.Position {
	b := make([]byte, 0, 32)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '}')
}

func parsePosition(pos connect.Position) (uint64, error) {
	// The form position writes, parsed without encoding/json: the worker
	// hands every Durable and Ack one.
	if digits, ok := bytes.CutPrefix(pos, []byte(`{"seq":`)); ok && len(digits) > 1 && len(digits) <= 21 && digits[len(digits)-1] == '}' && (digits[0] != '0' || len(digits) == 2) {
		if seq, err := strconv.ParseUint(string(digits[:len(digits)-1]), 10, 64); err == nil {
			return seq, nil
		}
	}
	var p struct {
		Seq *uint64 `json:"seq"`
	}
	if err := json.Unmarshal(pos, &p); err != nil {
		return 0, fmt.Errorf("position %q is not {\"seq\":N}: %w", pos, err)
	}
	if p.Seq == nil {
		return 0, fmt.Errorf("position %q has no seq: want {\"seq\":N}", pos)
	}
	return *p.Seq, nil
}

// Open parses the configuration, loads the dedup journal and starts the
// HTTP server. Requests are accepted from now on; they are answered once
// the worker acknowledged their records.
func (s *Source) Open(ctx context.Context, cfg connect.Config) (err error) {
	cfg.Spec = spec()
	set, err := parseSettings(cfg)
	if err != nil {
		return fmt.Errorf("httptrack config: %w", err)
	}
	var last uint64
	if cfg.Position != nil {
		if last, err = parsePosition(cfg.Position); err != nil {
			return fmt.Errorf("resume httptrack: %w", err)
		}
	}
	s.set, s.cfg = set, cfg
	s.logger = slog.Default().With("connector", Name, "pipeline", cfg.Pipeline, "source", cfg.Connector, "task", cfg.Task)
	s.nextSeq, s.acked, s.durable = last+1, last, last
	for i := range s.handed {
		s.handed[i] = last
	}
	s.waves = []wave{{upTo: maxSeq, ch: make(chan struct{})}}
	s.answered.Store(last)
	s.readable = make(chan struct{}, 1)
	s.durableCh = make(chan struct{}, 1)
	s.closing = make(chan struct{})
	s.ready = make(chan struct{})
	s.served = make(chan struct{})
	s.wakerDone = make(chan struct{})
	s.limiter = newLimiter(set.rateLimit)
	s.metrics = newMetrics(len(set.keys))

	if set.dedupWindow > 0 {
		s.dedup = newDedupSet(set.dedupWindow, set.dedupMax)
		if set.stateDir != "" {
			if err := os.MkdirAll(set.stateDir, 0o755); err != nil {
				return fmt.Errorf("httptrack state dir: %w", err)
			}
			path := filepath.Join(set.stateDir, journalName(cfg))
			j, rec, err := loadJournal(path, s.dedup, last, time.Now().UnixMilli())
			if err != nil {
				return err
			}
			switch {
			case rec.corrupt:
				s.logger.Error("dedup journal corrupt", "path", path, "offset", rec.offset, "dropped_bytes", rec.dropped, "what", rec.String())
			case rec.dropped > 0:
				s.logger.Warn("dedup journal recovered", "path", path, "offset", rec.offset, "dropped_bytes", rec.dropped, "what", rec.String())
			}
			s.recovered = rec
			s.journal = j
			s.journalBytes.Store(j.size)
			s.logger.Info("dedup journal loaded", "path", path, "ids", s.dedup.len(), "after_seq", last)
		} else {
			s.logger.Warn("dedup keeps messageIds in memory only: set state.dir to keep them across restarts")
		}
	}
	defer func() {
		if err != nil && s.journal != nil {
			s.journal.close()
		}
	}()

	ln, err := net.Listen("tcp", set.listen)
	if err != nil {
		return fmt.Errorf("httptrack listen on %s: %w", set.listen, err)
	}
	if set.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(set.tlsCert, set.tlsKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("httptrack tls: load %s and %s: %w", set.tlsCert, set.tlsKey, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
	}
	go s.wakeWaiters()
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("http server stopped", "error", err)
		}
	}()
	s.logger.Info("listening", "addr", ln.Addr().String(), "tls", set.tlsCert != "", "write_keys", len(set.keys))
	return nil
}

// journalName is the dedup journal's file name for one task.
func journalName(cfg connect.Config) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == 0 {
				return '_'
			}
			return r
		}, s)
	}
	return fmt.Sprintf("%s.%s.%d.dedup", clean(cfg.Pipeline), clean(cfg.Connector), cfg.Task)
}

// Addr returns the address the source listens on, e.g. to learn the port
// chosen for listen 127.0.0.1:0.
func (s *Source) Addr() net.Addr { return s.ln.Addr() }

// Read returns the records of the requests accepted since the last call,
// whole requests, about read.batch.events records at most. The last record
// of each request carries its position. It returns an empty batch after a
// second without requests. The first Read opens the source to tracking
// requests, which wait until then (see RecoverTail).
//
// Under load Read gathers: once the worker tells the source of durable
// records (Durable), a Read that finds requests while the records of the
// last gatherDepth Reads are all still on their way to the disk waits
// until the oldest of them are durable (at most maxGather, or until
// read.batch.events records wait), then returns every request that
// arrived meanwhile. Those requests could not have been answered before
// the fsyncs in flight ended anyway, and so one append and one fsync cover
// them all instead of one per handful of requests. The next batch is
// gathered (and its clients keep sending) while the previous one is
// fsync'ed. With nothing in flight (an idle or lightly loaded source) Read
// returns at once.
func (s *Source) Read(ctx context.Context) ([]connect.Record, error) {
	s.readyOnce.Do(func() {
		if n := s.recoveredIDs.Load(); n > 0 {
			s.logger.Info("recovered the messageIds of the log tail after the stored position: their retries are dropped", "message_ids", n, "skipped_records", s.recoveredSkipped.Load())
		}
		close(s.ready)
	})
	var idle, gather *time.Timer
	var gatherC <-chan time.Time
	gathered := false // maxGather passed: return what waits
	defer func() {
		if idle != nil {
			idle.Stop()
		}
		if gather != nil {
			gather.Stop()
		}
	}()
	took := false
	defer func() {
		if took {
			return // the next Read wakes the requests answered meanwhile
		}
		s.mu.Lock()
		s.takingNext = false
		if s.wakeDue {
			s.wakeAnsweredLocked()
		}
		s.mu.Unlock()
	}()
	// The requests answered since the last Read returned are woken now
	// (see advance), after the worker appended that Read's batch.
	s.mu.Lock()
	if s.wakeDue {
		s.wakeAnsweredLocked()
	}
	s.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		waits := len(s.queue) > 0
		if waits && (gathered || !s.gatherLocked()) {
			recs, jbuf, k := s.takeLocked()
			s.takingNext, took = false, true
			s.mu.Unlock()
			s.reads.Add(1)
			s.readRequests.Add(int64(k))
			if err := s.writeJournal(jbuf); err != nil {
				return nil, err
			}
			return recs, nil
		}
		if s.wakeDue { // answered, but this Read waits on
			s.wakeAnsweredLocked()
		}
		s.takingNext = waits && !gathered // a Durable ends the wait: this Read takes the queue
		s.mu.Unlock()
		if waits && gather == nil {
			gather = time.NewTimer(maxGather)
			gatherC = gather.C
		}
		var idleC <-chan time.Time
		if !waits { // the queue only empties in Read: waits stays true once set
			if idle == nil {
				idle = time.NewTimer(idleRead)
			}
			idleC = idle.C
		}
		select {
		case <-s.readable:
		case <-s.durableCh:
		case <-gatherC:
			gathered = true
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closing:
			return nil, errors.New("httptrack: read after close")
		case <-idleC:
			return nil, nil
		}
	}
}

// maxGather bounds how long a Read under load waits for the records in
// flight to become durable before it returns the requests that wait; a
// variable for tests.
var maxGather = 20 * time.Millisecond

// gatherDepth is how many Reads may have records on their way to the disk
// before the next Read gathers. With 1, each partition is fsync'ed once
// per Read under load, and a Read carries about half the waiting clients;
// with 2 the partitions were fsync'ed about 20% more often per request
// (Reads of about a third of the clients) for more CPU per request:
// 64 clients on the 2-core VM, alternated runs, bench/httptrack/README.md.
const gatherDepth = 1

// gatherLocked reports whether a Read should wait before taking the queue:
// the worker tells of durability, the records of the last gatherDepth
// Reads are not all durable, and the queue is not full.
func (s *Source) gatherLocked() bool {
	return s.notified && s.handed[0] > s.durable && s.queuedRecs < s.set.readBatch
}

// takeLocked takes whole requests off the queue, about readBatch records,
// and the journal entries written so far; k is how many requests.
func (s *Source) takeLocked() (recs []connect.Record, jbuf []byte, k int) {
	n := 0
	for k < len(s.queue) && (k == 0 || n+len(s.queue[k].recs) <= s.set.readBatch) {
		n += len(s.queue[k].recs)
		k++
	}
	recs = make([]connect.Record, 0, n)
	for _, r := range s.queue[:k] {
		recs = append(recs, r.recs...)
		s.queuedBytes -= r.bytes
	}
	s.queuedRecs -= n
	copy(s.handed[:], s.handed[1:])
	s.handed[gatherDepth-1] = s.queue[k-1].seq
	s.sealLocked(s.queue[k-1].seq)
	clear(s.queue[:k])
	s.queue = s.queue[k:]
	if len(s.queue) == 0 {
		s.queue = nil
	}
	jbuf = s.jbuf
	s.jbuf = nil
	return recs, jbuf, k
}

// writeJournal appends entries to the dedup journal before their records
// are handed out, and compacts the file when it has grown well past the
// live set. The journal's own goroutine fsyncs it once a second.
func (s *Source) writeJournal(b []byte) error {
	j := s.journal
	if j == nil {
		return nil
	}
	if err := j.write(b); err != nil {
		return err
	}
	s.mu.Lock()
	live := int64(s.dedup.len())
	s.mu.Unlock()
	if j.size > max(compactMinBytes, 4*40*live) {
		// Take the set under the lock, write it without: entries added
		// meanwhile are in s.jbuf, appended by the next Read.
		s.mu.Lock()
		buf := compaction(s.dedup)
		s.mu.Unlock()
		if err := j.compact(buf); err != nil {
			return err
		}
	}
	s.journalBytes.Store(j.size)
	return nil
}

// Ack marks every request up to pos's seq as durable with its position
// stored and releases the requests waiting for it, which answer 200.
func (s *Source) Ack(_ context.Context, pos connect.Position) error {
	return s.advance("ack", pos, true)
}

// Durable marks every request up to pos's seq as durable in the log, its
// position not yet stored. With dedup on it releases the requests waiting
// for it, which answer 200: a crash before the position is stored leaves
// their records in the log tail, which the next start recovers
// (RecoverTail), so a resend of them is dropped. With dedup off nothing
// would drop a resend, and requests wait for Ack. It implements
// connect.DurableNotifier.
func (s *Source) Durable(_ context.Context, pos connect.Position) error {
	return s.advance("durable", pos, false)
}

// AcksLazily reports whether the worker may store positions lazily: with
// dedup on, requests are answered on Durable and nothing waits for Ack;
// with dedup off they are answered on Ack, which must come promptly. It
// implements connect.LazyAcker.
func (s *Source) AcksLazily() bool { return s.dedup != nil }

// advance raises durable, and acked when stored, to pos's seq, and wakes
// the waiting requests when that answers more of them.
func (s *Source) advance(call string, pos connect.Position, stored bool) error {
	seq, err := parsePosition(pos)
	if err != nil {
		return fmt.Errorf("httptrack %s: %w", call, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq >= s.nextSeq {
		return fmt.Errorf("httptrack %s: position %s is after the last request given out (seq %d)", call, pos, s.nextSeq-1)
	}
	before := s.answeredLocked()
	if !stored {
		s.notified = true
	}
	if seq > s.durable {
		s.durable = seq
		select {
		case s.durableCh <- struct{}{}:
		default:
		}
	}
	if stored {
		s.acked = max(s.acked, seq)
	}
	if a := s.answeredLocked(); a > before {
		s.answered.Store(a)
		s.wakeDue = true
	}
	// While a Read waits to take the queue once records are durable, the
	// requests this answers are woken when the worker calls Read next,
	// after it appended the batch that Read returns: woken first, they
	// (and their clients' next requests) would run before the appending
	// goroutine and the log's fsync goroutines, and the next group commit
	// would start that much later. Nothing else waits for them: Read comes
	// right back under load, and wakeWaiters, Close and every later
	// advance without such a Read wake them too.
	if s.wakeDue && !s.takingNext {
		s.wakeAnsweredLocked()
	}
	return nil
}

// answeredLocked returns the seq up to which requests are answered 200:
// durable with dedup on (a resend after a crash is dropped), else acked.
func (s *Source) answeredLocked() uint64 {
	if s.dedup != nil {
		return s.durable
	}
	return s.acked
}

// Close stops the server in two phases: requests still waiting for their
// records to be durable are answered 503 with Retry-After (their clients
// retry; dedup drops what did become durable), and in-flight requests get
// until ctx's deadline (at most 5s without one) to finish; then the
// remaining connections are closed. It then syncs and closes the dedup
// journal.
func (s *Source) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		if s.srv == nil {
			return
		}
		close(s.closing)
		s.mu.Lock()
		s.wakeAllLocked() // waiting requests answer 503
		s.mu.Unlock()
		var errs []error
		if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
		}
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close() // hard stop
		}
		<-s.served
		<-s.wakerDone
		if s.journal != nil {
			if err := s.journal.close(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// newMessageID returns a random id for a message that came without one.
func newMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // UUID version 4
	b[8] = b[8]&0x3f | 0x80
	var out [36 + 4]byte
	copy(out[:], "api-")
	hex.Encode(out[4:12], b[0:4])
	out[12] = '-'
	hex.Encode(out[13:17], b[4:6])
	out[17] = '-'
	hex.Encode(out[18:22], b[6:8])
	out[22] = '-'
	hex.Encode(out[23:27], b[8:10])
	out[27] = '-'
	hex.Encode(out[28:40], b[10:16])
	return string(out[:])
}
