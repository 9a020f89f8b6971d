package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// sourceWindow is how many appended batches may wait for their fsync while
// the source reads the next one. One fsync then covers several batches.
const sourceWindow = 8

// Lingering: while an append is in flight (written, not yet durable), the
// records read meanwhile can be held and appended together once it is
// durable, for up to the source's ConnectorSpec.Linger, or sooner when
// sourceLingerRecords or sourceLingerBytes are held. With nothing in
// flight a read is appended at once. Measured with bench/engine at 10,000
// events/s on a loaded 2-core VM, a 5 ms linger cut appends and log fsyncs
// about 3x and CPU per record from about 50 to 29 µs, but raised the p50
// latency from about 3 to 14 ms without a clear p99 gain, so it is off
// unless a source sets it (linger: in a pipeline file, Kafka Connect's
// producer.override.linger.ms over REST): by default only reads already
// waiting are merged into an append (which is what batches a source at
// full speed). Measured again (bench/engine -linger, 2-core VM, 4
// alternating runs each, once while other processes used about half of
// it and once nearly alone), 5 ms cut appends about 5x and log fsyncs
// 20-30%, but not the CPU per record (about 92 and 98 µs either way); p50
// stayed about the same (5 ms alone) and p99 was lower alone (15 against
// 20 ms), within the spread loaded: still off by default. A lazy-acking source without transforms
// (httptrack) is appended by its reading goroutine and does not linger:
// it gathers its reads itself.
const (
	sourceLingerRecords = 4096
	sourceLingerBytes   = 4 << 20
)

// sourcePositionInterval bounds how long a position store waits while
// batches keep becoming durable: positions of batches made durable
// meanwhile are merged into one store (an append and fsync of the offsets
// topic). When no other batch is waiting, the position is stored and acked
// at once, so a source that answers clients on Ack (httptrack) is not held
// back.
const sourcePositionInterval = 200 * time.Millisecond

// sourceReadAhead is how many read (and transformed) batches wait for the
// appender; the reader reads the next one meanwhile.
const sourceReadAhead = 4

// readBatch is a batch read from the source and transformed.
type readBatch struct {
	recs   []connect.Record
	pos    connect.Position // of the batch's last positioned record; nil if none
	posEnd int              // recs[:posEnd] came from records up to that one
	bytes  int              // of keys and values
	start  time.Time        // when it was read
}

// inflight is a batch written to the log and not yet known durable. The
// committer closes done once it is durable (or failed).
type inflight struct {
	wait   func(context.Context) error
	pos    connect.Position
	recs   []connect.Record // only for a tail tracker: Partition and Offset are set once wait returns
	posEnd int              // recs[:posEnd] are covered by pos
	start  time.Time
	done   chan struct{}
}

// testHookBeforePositionStore, when set (by tests, before the worker
// starts), runs before each position store; an error fails the task there,
// as a crash between the append and the store would leave it.
var testHookBeforePositionStore func(connector string, pos connect.Position) error

// runSource runs a source task until soft ends (clean stop) or it fails:
// read → transform → append → (once durable) store position → Ack. Three
// goroutines share the work: a reader (Read and transforms), the appender
// (this one) and a committer that waits for durability, so the next batch
// is read and appended while the previous ones are fsync'ed. Appends keep
// the order of reads. A lazy-acking connect.DurableNotifier without
// transforms is read and appended by this goroutine alone (see below).
func (r *runner) runSource(hard, soft context.Context, cfg connect.Config, c chain) error {
	src := r.conn.NewSource()
	if err := src.Open(soft, cfg); err != nil {
		if soft.Err() != nil {
			return nil
		}
		return fmt.Errorf("open source %s: %w", r.spec.Name, err)
	}
	r.setReporter(src)
	defer func() {
		r.setReporter(nil)
		if err := src.Close(context.WithoutCancel(hard)); err != nil {
			r.logger.Warn("close source", "error", err)
		}
	}()
	var tail *tailTracker
	tr, recovers := src.(connect.TailRecoverer)
	if recovers {
		var err error
		if tail, err = r.recoverTail(soft, tr, cfg.Position != nil); err != nil {
			if soft.Err() != nil {
				return nil
			}
			return err
		}
	}
	n := r.durableNotifier(src, recovers, cfg.Position != nil)
	if la, ok := src.(connect.LazyAcker); ok && n != nil && la.AcksLazily() {
		n.lazy = true
	}
	r.setTaskState(StateRunning, "")
	rctx, stopReading := context.WithCancel(soft)
	defer stopReading()
	window := make(chan inflight, sourceWindow)
	// held is set while a lingering appender holds a batch for the
	// window: a batch waits then, though the window may be empty.
	var held *atomic.Bool
	if r.spec.Linger > 0 {
		held = new(atomic.Bool)
	}
	committed := make(chan error, 1)
	go func() { committed <- r.commitSourcePositions(hard, src, window, held, stopReading, tail, n) }()

	var err error
	if n != nil && n.lazy && len(c) == 0 {
		// A source that answers its clients on Durable and gathers its
		// reads while records are on their way to the disk (httptrack)
		// needs no read-ahead: the goroutine that read a batch appends
		// it, so the log's fsyncs start one goroutine hand-off sooner
		// after a Read returns, and before the source's next Read.
		err = r.readSource(rctx, src, c, func(b readBatch) error {
			_, err := r.appendBatch(hard, b, window, tail != nil)
			return err
		})
	} else {
		reads := make(chan readBatch, sourceReadAhead)
		readErr := make(chan error, 1)
		go func() {
			defer close(reads)
			readErr <- r.readSource(rctx, src, c, func(b readBatch) error {
				select {
				case reads <- b:
					return nil
				case <-rctx.Done():
					return errStopReading
				}
			})
		}()
		err = r.appendSource(hard, rctx, reads, window, held, tail != nil)
		stopReading()
		for range reads { // what was read and not appended is not acked and comes again
		}
		if rerr := <-readErr; err == nil {
			err = rerr
		}
	}
	stopReading()
	close(window) // drain: the committer finishes every batch in flight
	if cerr := <-committed; err == nil {
		err = cerr
	}
	return err
}

// durableNotice is how the committer tells a connect.DurableNotifier
// source that records are durable, before their position is stored.
type durableNotice struct {
	src connect.DurableNotifier
	// on is false while the source would not be handed, after a crash,
	// the records announced (connect.TailRecoverer, see the
	// DurableNotifier contract); a stored position with a tail turns it
	// on. armed says whether it may be turned on.
	on, armed bool
	// lazy says the source (connect.LazyAcker) needs no prompt store
	// while it hears Durable: positions are stored once per
	// sourcePositionInterval.
	lazy bool
}

// durableNotifier returns how to tell src that records are durable; nil
// when src does not implement connect.DurableNotifier. A source that also
// implements connect.TailRecoverer is told only once a position with the
// log offsets reached is stored (by an earlier run: resumed, or by this
// one), and only on a backend that can read the tail back.
func (r *runner) durableNotifier(src connect.Source, recovers, resumed bool) *durableNotice {
	dn, ok := src.(connect.DurableNotifier)
	if !ok {
		return nil
	}
	if !recovers {
		return &durableNotice{src: dn, on: true}
	}
	if _, ok := r.w.opts.Backend.(RangeReader); !ok {
		r.logger.Warn("the log backend cannot read partition ranges: the source hears of durable records on Ack only")
		return &durableNotice{src: dn}
	}
	return &durableNotice{src: dn, armed: true, on: resumed && r.w.offsets.Tail(r.spec.Pipeline, r.spec.Name) != nil}
}

// errStopReading is what an emit function of readSource returns when ctx
// ended while it waited: readSource then returns nil.
var errStopReading = errors.New("stop reading")

// readSource is the reading half of a source task: Read and transform,
// handing each batch to emit, until ctx ends (nil), reading fails or emit
// fails. It blocks while paused.
func (r *runner) readSource(ctx context.Context, src connect.Source, c chain, emit func(readBatch) error) error {
	m := r.w.metrics
	bo := backoff{initial: 100 * time.Millisecond, max: 10 * time.Second}
	for {
		if !r.waitWhilePaused(ctx) {
			return nil
		}
		recs, err := src.Read(ctx)
		if ctx.Err() != nil {
			return nil // stop requested: whatever was read is not acked and comes again
		}
		if err != nil {
			if connect.IsRetryable(err) {
				m.errors.WithLabelValues(r.spec.Name, "read").Inc()
				if sleep(ctx, bo.next()) != nil {
					return nil
				}
				continue
			}
			return fmt.Errorf("read from source %s: %w", r.spec.Name, err)
		}
		bo.reset()
		if len(recs) == 0 {
			continue
		}
		r.m.recordsRead.Add(float64(len(recs)))
		b := readBatch{start: time.Now()}
		if len(c) == 0 {
			// No transforms: the records stay where the source put them
			// (the worker owns them).
			b.recs = recs
			for i := range recs {
				rec := &recs[i]
				if rec.Position != nil {
					b.pos, b.posEnd = rec.Position, i+1
				}
				if rec.Topic == "" {
					rec.Topic = r.spec.Topic
				}
				rec.Position = nil
				b.bytes += len(rec.Key) + len(rec.Value)
			}
			if err := emit(b); err != nil {
				return stopped(err)
			}
			continue
		}
		b.recs = make([]connect.Record, 0, len(recs))
		for _, rec := range recs {
			positioned := rec.Position != nil
			if positioned {
				b.pos = rec.Position
			}
			if rec.Topic == "" {
				rec.Topic = r.spec.Topic
			}
			rec.Position = nil
			n := len(b.recs)
			var err error
			if b.recs, err = c.appendApplied(b.recs, rec); err != nil {
				m.errors.WithLabelValues(r.spec.Name, "transform").Inc()
				return fmt.Errorf("source %s: %w", r.spec.Name, err)
			}
			for i := range b.recs[n:] {
				b.bytes += len(b.recs[n+i].Key) + len(b.recs[n+i].Value)
			}
			if positioned {
				b.posEnd = len(b.recs)
			}
		}
		if err := emit(b); err != nil {
			return stopped(err)
		}
	}
}

// stopped returns err, or nil for errStopReading.
func stopped(err error) error {
	if errors.Is(err, errStopReading) {
		return nil
	}
	return err
}

// appendSource is the appending half of a source task: it appends what the
// reader hands over, merging the batches that wait (and, while an append
// is in flight, lingering for more), until reads is closed or ctx ends.
// With track set, each batch's records go to the committer's tail tracker.
// A non-nil held is set from when a batch is taken from reads until it is
// in the window.
func (r *runner) appendSource(hard, ctx context.Context, reads <-chan readBatch, window chan<- inflight, held *atomic.Bool, track bool) error {
	var last chan struct{} // closed once the last append is durable; nil before the first
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for {
		var b readBatch
		var ok bool
		select {
		case b, ok = <-reads:
		case <-ctx.Done():
			return nil
		}
		if !ok {
			return nil
		}
		if held != nil {
			held.Store(true)
		}
		closed := gather(ctx, &b, reads, last, r.spec.Linger, linger)
		done, err := r.appendBatch(hard, b, window, track)
		if held != nil {
			held.Store(false)
		}
		if err != nil {
			return err
		}
		last = done
		if closed {
			return nil
		}
	}
}

// appendBatch appends b and hands it to the committer through window
// (blocking while sourceWindow batches wait for their fsync). It returns
// the channel the committer closes once b is durable.
func (r *runner) appendBatch(hard context.Context, b readBatch, window chan<- inflight, track bool) (chan struct{}, error) {
	f := inflight{start: b.start, pos: b.pos, wait: func(context.Context) error { return nil }, done: make(chan struct{})}
	if len(b.recs) > 0 {
		// Appends use the hard context: a batch that was read is
		// finished even while stopping, so its position can be stored.
		wait, err := r.w.opts.Backend.Append(hard, b.recs)
		if err != nil {
			return nil, fmt.Errorf("append records of source %s: %w", r.spec.Name, err)
		}
		f.wait = wait
		if track {
			f.recs, f.posEnd = b.recs, b.posEnd
		}
		r.m.recordsWritten.Add(float64(len(b.recs)))
	}
	window <- f
	return f.done, nil
}

// gather merges into b the batches waiting in reads and, while the last
// append is in flight (lastDone not closed), those read meanwhile, for up
// to d, until b is full. It returns early when reads is closed (and says
// so) or ctx ends: b is then appended, as a stop finishes the batch in
// hand.
func gather(ctx context.Context, b *readBatch, reads <-chan readBatch, lastDone <-chan struct{}, d time.Duration, linger *time.Timer) (closed bool) {
	if waiting := len(reads); waiting > 0 && !b.full() {
		// Room for the batches waiting, if they are like this one: one
		// allocation instead of one per doubling.
		recs := make([]connect.Record, len(b.recs), len(b.recs)*(1+waiting))
		copy(recs, b.recs)
		b.recs = recs
	}
	var timeout <-chan time.Time
	for !b.full() {
		select {
		case next, ok := <-reads:
			if !ok {
				return true
			}
			b.merge(next)
			continue
		default:
		}
		if lastDone == nil || d <= 0 {
			return false // nothing in flight, or no lingering: append at once
		}
		if timeout == nil {
			linger.Reset(d)
			timeout = linger.C
		}
		select {
		case next, ok := <-reads:
			if !ok {
				return true
			}
			b.merge(next)
		case <-lastDone:
			return false
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return false
}

// full reports whether b holds enough to append without lingering.
func (b *readBatch) full() bool {
	return len(b.recs) >= sourceLingerRecords || b.bytes >= sourceLingerBytes
}

// merge appends next, read after b, to b.
func (b *readBatch) merge(next readBatch) {
	if next.pos != nil {
		b.pos, b.posEnd = next.pos, len(b.recs)+next.posEnd
	}
	b.recs = append(b.recs, next.recs...)
	b.bytes += next.bytes
}

// commitSourcePositions is the committing half of a source task: for each
// batch, in order, it waits until the batch is durable; then, with a
// DurableNotifier n, it tells the source the batch's position at once
// (Durable), and it stores the newest position reached and acks it: at
// once when no other batch waits (but for a connect.LazyAcker hearing
// Durable), else at most every sourcePositionInterval, and once more when
// window is closed.
// Durable and Ack are called from this goroutine only, so never
// concurrently, and each Durable(pos) before the store and Ack of pos.
// On a failure it calls stopReading and drains the window. With a tail
// tracker, each position is stored with the log offsets reached by the
// batch that carried it. A batch a lingering appender holds (held set)
// waits as one in the window does: with a linger, the window is empty
// whenever a batch becomes durable, as the next one is held until then,
// and storing at once would store (append and fsync to the offsets topic)
// once per append, about as often as the linger saves appends.
func (r *runner) commitSourcePositions(ctx context.Context, src connect.Source, window <-chan inflight, held *atomic.Bool, stopReading func(), tail *tailTracker, n *durableNotice) error {
	var pending connect.Position
	var pendingTail []PartitionOffset
	var failed error
	var last time.Time // of the last store
	var timer *time.Timer
	var fire <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	flush := func() {
		if pending == nil || failed != nil {
			return
		}
		if hook := testHookBeforePositionStore; hook != nil {
			if err := hook(r.spec.Name, pending); err != nil {
				failed = err
				stopReading()
				return
			}
		}
		if err := r.w.offsets.PutWithTail(ctx, r.spec.Pipeline, r.spec.Name, pending, pendingTail); err != nil {
			failed = err
			stopReading()
			return
		}
		last = time.Now()
		if n != nil && n.armed && tail != nil {
			n.on = true // a crash from now on leaves the source a tail to recover
		}
		if err := src.Ack(ctx, pending); err != nil {
			if !connect.IsRetryable(err) {
				failed = fmt.Errorf("ack position of source %s: %w", r.spec.Name, err)
				stopReading()
				return
			}
			r.logger.Warn("ack failed; the next ack covers it", "error", err)
		}
		pending = nil
	}
	for {
		select {
		case f, ok := <-window:
			if !ok {
				flush()
				return failed
			}
			if failed != nil {
				close(f.done)
				continue // drain without storing anything past the failure
			}
			if err := f.wait(ctx); err != nil {
				close(f.done)
				failed = fmt.Errorf("append records of source %s: %w", r.spec.Name, err)
				stopReading()
				continue
			}
			close(f.done)
			r.m.batchSeconds.Observe(time.Since(f.start).Seconds())
			// The tail stored with a position covers the records up to
			// the positioned one: those after it (read after it, in the
			// same batch) are the source's unacknowledged tail.
			if tail != nil {
				tail.note(f.recs[:f.posEnd])
			}
			if f.pos != nil {
				pending = f.pos
				if tail != nil {
					pendingTail = tail.snapshot()
				}
			}
			if tail != nil {
				tail.note(f.recs[f.posEnd:])
			}
			if f.pos != nil && n != nil && n.on {
				if err := n.src.Durable(ctx, f.pos); err != nil {
					if !connect.IsRetryable(err) {
						failed = fmt.Errorf("tell source %s its records are durable: %w", r.spec.Name, err)
						stopReading()
						continue
					}
					r.logger.Warn("durable notice failed; the next one covers it", "error", err)
				}
			}
			if pending == nil {
				continue
			}
			// Store now when nothing else is waiting, in the window or
			// held by a lingering appender (a source may answer its
			// clients on Ack), else at least every
			// sourcePositionInterval while batches keep coming. A lazy
			// acker that heard Durable waits for the interval either way.
			// held before the window: the appender clears held once the
			// batch it held is in the window.
			eager := (held == nil || !held.Load()) && len(window) == 0 && (n == nil || !n.lazy || !n.on)
			if wait := sourcePositionInterval - time.Since(last); wait <= 0 || eager {
				flush()
				if fire != nil {
					// The interval starts again: a timer left running
					// would store the next position right after this.
					timer.Stop()
					fire = nil
				}
			} else if fire == nil {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				fire = timer.C
			}
		case <-fire:
			fire = nil
			flush()
		}
	}
}

// holderRefresh is how often a standby asks who holds its source's lease,
// for its status.
const holderRefresh = 2 * time.Second

// runLeasedSource runs a source task on a backend that leases sources
// (SourceLeaser). The worker joins the source's lease and stands by (task
// UNASSIGNED, its trace naming the lease and its holder) until it holds
// it; it then runs the task from the position stored last, by whichever
// worker stored it, until soft ends, the task fails, or the lease is taken
// away. A task stopped by a revoke drains and stores its position as any
// stop does before the lease passes on, and the worker stands by again.
func (r *runner) runLeasedSource(hard, soft context.Context, cfg connect.Config, c chain, leaser SourceLeaser) error {
	lease, err := leaser.LeaseSource(soft, r.spec.Pipeline, r.spec.Name, r.w.opts.WorkerID)
	if err != nil {
		if soft.Err() != nil {
			return nil
		}
		return fmt.Errorf("join the lease of source %s: %w", r.spec.Name, err)
	}
	defer func() {
		if err := lease.Close(); err != nil {
			r.logger.Warn("leave the source's lease", "lease", lease.Name(), "error", err)
		}
	}()
	for {
		revoked, release, err := r.standBy(soft, lease)
		if err != nil {
			if soft.Err() != nil {
				return nil
			}
			return fmt.Errorf("acquire the lease of source %s: %w", r.spec.Name, err)
		}
		r.logger.Info("source lease acquired; running the task", "lease", lease.Name())
		r.setTaskState(StateUnassigned, "") // no longer standing by; RUNNING once the source is open
		err = r.runHeld(hard, soft, cfg, c, revoked)
		release()
		if err != nil || soft.Err() != nil {
			return err
		}
		r.logger.Info("source lease taken away; the task stopped and this worker stands by", "lease", lease.Name())
	}
}

// standBy waits for the lease, showing the task UNASSIGNED meanwhile with
// a trace that names the lease and, refreshed every holderRefresh, the
// worker that holds it.
func (r *runner) standBy(soft context.Context, lease SourceLease) (<-chan struct{}, func(), error) {
	ctx, cancel := context.WithCancel(soft)
	shown := make(chan struct{})
	go func() {
		defer close(shown)
		r.showStandby(ctx, lease)
	}()
	revoked, release, err := lease.Acquire(ctx)
	cancel()
	<-shown
	return revoked, release, err
}

func (r *runner) showStandby(ctx context.Context, lease SourceLease) {
	waiting := "standby: waiting for this source's lease (" + lease.Name() + "); its task runs in the one worker that holds it"
	r.setTaskState(StateUnassigned, waiting)
	t := time.NewTicker(holderRefresh)
	defer t.Stop()
	for {
		hctx, cancel := context.WithTimeout(ctx, holderRefresh)
		holder, err := lease.Holder(hctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			r.logger.Warn("standby cannot tell who holds the source's lease", "lease", lease.Name(), "error", err)
			r.setTaskState(StateUnassigned, waiting+" (last error: "+err.Error()+")")
		case holder != "":
			r.setTaskState(StateUnassigned, fmt.Sprintf("standby: the task runs on worker %s, which holds this source's lease (%s); this worker takes over when that one stops or its group session times out", holder, lease.Name()))
		default:
			r.setTaskState(StateUnassigned, waiting)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runHeld runs the source task while this worker holds its lease: until
// soft ends, the task fails, or revoked is closed.
func (r *runner) runHeld(hard, soft context.Context, cfg connect.Config, c chain, revoked <-chan struct{}) error {
	ctx, cancel := context.WithCancel(soft)
	defer cancel()
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-revoked:
			cancel()
		case <-stop:
		}
	}()
	defer func() {
		close(stop)
		<-watched
	}()
	if err := r.reloadPosition(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cfg.Position = r.w.offsets.Get(r.spec.Pipeline, r.spec.Name)
	return r.runSource(hard, ctx, cfg, c)
}

// reloadPosition reads the source's position (and tail offsets) from the
// offsets topic again: the worker that held the lease before stored
// positions this worker's OffsetStore has not seen.
func (r *runner) reloadPosition(ctx context.Context) error {
	if err := r.w.offsets.Reload(ctx, r.spec.Pipeline, r.spec.Name); err != nil {
		return fmt.Errorf("reload the position of source %s: %w", r.spec.Name, err)
	}
	return nil
}
