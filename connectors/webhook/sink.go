package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tributary-io/tributary/connect"
)

// userAgent is sent with every request.
const userAgent = "tributary-webhook/" + version

// Sink delivers records over HTTP. Make one with Connector().NewSink or
// new(Sink).
type Sink struct {
	set       settings
	client    *http.Client
	transport *http.Transport
	lim       *limiter
	mask      *masker
	logger    *slog.Logger // where to log; nil is slog.Default(); tests set it
	log       *slog.Logger // logger with the sink's attributes, from Open

	// After a Write that returned an error, prev holds its records' ids
	// and prevOut their outcomes. The worker then writes the batch again,
	// or the rest of it after a bad record: a suffix of prev, whose done
	// records Write skips. (Not a map by id: transforms may give several
	// records the same topic, partition and offset.) Only Write touches
	// them.
	prev    []recordID
	prevOut []outcome

	// failing is set when an attempt failed and will be retried, and
	// cleared by a delivery: while it is set, a stop request cuts every
	// request short (see send).
	failing atomic.Bool

	stats stats
}

var (
	_ connect.Sink     = (*Sink)(nil)
	_ connect.Reporter = (*Sink)(nil)
)

// recordID names a record in the log.
type recordID struct {
	topic     string
	partition int32
	offset    int64
}

// idOf returns where r was read (connect.Record.Original): a sink-side
// route may give records of several topics the same topic, partition and
// offset.
func idOf(r *connect.Record) recordID {
	topic, partition, offset := r.Original()
	return recordID{topic, partition, offset}
}

// outcome is what became of one record of a Write.
type outcome struct {
	state outcomeState
	err   error // why it failed
}

type outcomeState uint8

const (
	pending outcomeState = iota
	delivered
	failed
)

// item is one record to send, rendered.
type item struct {
	idx    int // in the batch given to Write
	data   *recordData
	lane   *lane
	target string // method, URL and headers: items with equal targets may share a request
	method string
	url    string
	header http.Header // shared with other items: never modified
	body   []byte
}

// lane is the records of one key in log order; one request of a lane is
// in flight at a time.
type lane struct {
	items []*item
	next  int // the first not yet sent
}

// request is one HTTP request carrying one or more items.
type request struct {
	items  []*item
	id     string
	method string
	url    string
	header http.Header // owned by the request
	body   []byte
}

// Write delivers the batch and returns when every record is delivered, has
// failed, or is held back behind a failed record of its key (it is sent by
// the Write of the rest of the batch, after the worker dead-lettered the
// failed one). It returns nil when all were delivered; otherwise
// connect.BadRecordAt for the first failed record, every record before it
// being delivered (see the package doc for why the order of delivery
// allows that); its error is marked connect.Permanent when sending the
// record again would get the same answer (a 4xx or 3xx, a template that
// fails on it), not when it gave up after retries. It returns ctx.Err() when ctx ends first, an error wrapping
// connect.ErrStopping when the worker asked the task to stop while the
// receiver fails (retries are not waited for), and a plain error (which
// fails the task) when the receiver is gone or not trusted.
func (s *Sink) Write(ctx context.Context, records []connect.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.client == nil {
		return errors.New("webhook sink: write to a sink that is not open")
	}
	out := make([]outcome, len(records))
	s.recall(records, out)
	items := s.prepare(records, out)
	err := s.deliver(ctx, items, out)
	first := -1
	for i := range out {
		if out[i].state == failed {
			first = i
			break
		}
	}
	if err == nil && first < 0 {
		s.prev, s.prevOut = nil, nil
		return nil
	}
	s.remember(records, out)
	if err != nil {
		return err
	}
	return connect.BadRecordAt(first, out[first].err)
}

// remember keeps the outcomes of the batch for the next Write.
func (s *Sink) remember(records []connect.Record, out []outcome) {
	s.prev = make([]recordID, len(records))
	for i := range records {
		s.prev[i] = idOf(&records[i])
	}
	s.prevOut = out
}

// recall copies into out the outcomes of the previous Write when records
// are a suffix of its batch, and forgets them.
func (s *Sink) recall(records []connect.Record, out []outcome) {
	prev, prevOut := s.prev, s.prevOut
	s.prev, s.prevOut = nil, nil
	skip := len(prev) - len(records)
	if prev == nil || skip < 0 {
		return
	}
	for i := range records {
		if idOf(&records[i]) != prev[skip+i] {
			return
		}
	}
	copy(out, prevOut[skip:])
}

// prepare renders the records to send, but those done in an earlier
// Write and those held back behind a failed record of their key (they
// stay pending until the worker has dead-lettered it). Skipped tombstones
// and records whose templates fail get their outcome at once.
func (s *Sink) prepare(records []connect.Record, out []outcome) []*item {
	items := make([]*item, 0, len(records))
	lanes := make(map[string]*lane)
	var held map[string]bool // keys with a failed record earlier in the batch
	var keyBuf []byte
	for i := range records {
		rec := &records[i]
		if rec.Key != nil {
			keyBuf = append(append(append(keyBuf[:0], rec.Topic...), 0), rec.Key...)
			if held[string(keyBuf)] {
				continue // after a failed record of its key: pending
			}
		}
		switch out[i].state {
		case delivered:
			continue // done in an earlier Write
		case failed:
			if rec.Key != nil {
				held = holdKey(held, keyBuf)
			}
			continue
		}
		if rec.IsTombstone() && !s.set.sendTombstones {
			out[i] = outcome{state: delivered}
			continue
		}
		it, err := s.render(i, rec)
		if err != nil {
			// Permanent: the record renders the same the next time.
			s.stats.failed.Add(1)
			out[i] = outcome{state: failed, err: connect.Permanent(s.mask.Error(err))}
			if rec.Key != nil {
				held = holdKey(held, keyBuf)
			}
			continue
		}
		// Records of one key keep their order; records without a key have
		// none to keep.
		l := &lane{}
		if rec.Key != nil {
			if found := lanes[string(keyBuf)]; found != nil {
				l = found
			} else {
				lanes[string(keyBuf)] = l
			}
		}
		it.lane = l
		l.items = append(l.items, it)
		items = append(items, it)
	}
	return items
}

// holdKey adds a lane key (topic, 0, key) to held, making the map when
// it is nil.
func holdKey(held map[string]bool, key []byte) map[string]bool {
	if held == nil {
		held = map[string]bool{}
	}
	held[string(key)] = true
	return held
}

// render renders the request parts of one record.
func (s *Sink) render(idx int, rec *connect.Record) (*item, error) {
	d := &recordData{rec: rec}
	it := &item{idx: idx, data: d, method: http.MethodPost, header: s.set.baseHeader}
	var err error
	if s.set.method != nil {
		if it.method, err = s.set.method.renderString(d); err != nil {
			return nil, fmt.Errorf("render method: %w", err)
		}
		it.method = strings.ToUpper(strings.TrimSpace(it.method))
		if err := checkMethod(it.method); err != nil {
			return nil, fmt.Errorf("render method: %w", err)
		}
	}
	if it.url, err = s.set.url.renderString(d); err != nil {
		return nil, fmt.Errorf("render url: %w", err)
	}
	if s.set.url.t != nil {
		it.url = strings.TrimSpace(it.url)
		if err := checkURL(it.url); err != nil {
			return nil, fmt.Errorf("render url: %w", err)
		}
	}
	if s.set.templatedHeaders {
		it.header = s.set.baseHeader.Clone()
		for _, h := range s.set.headers {
			if h.value.t == nil {
				continue
			}
			v, err := h.value.renderString(d)
			if err != nil {
				return nil, fmt.Errorf("render header %s: %w", h.name, err)
			}
			if strings.ContainsAny(v, "\r\n") {
				return nil, fmt.Errorf("render header %s: the value holds a line break", h.name)
			}
			it.header.Set(h.name, v)
		}
	}
	if it.body, err = s.renderBody(d); err != nil {
		return nil, err
	}
	if s.set.batchSize > 1 {
		// The default body is JSON already.
		if s.set.body != nil && !json.Valid(it.body) {
			return nil, fmt.Errorf("render body: in batch mode each record's body must be JSON, got %.100q", it.body)
		}
		// With static method, URL and headers every item has the same
		// target: leave it empty.
		if s.set.url.t != nil || (s.set.method != nil && s.set.method.t != nil) {
			it.target = it.method + "\x00" + it.url
		}
		if s.set.templatedHeaders {
			var b strings.Builder
			for _, h := range s.set.headers {
				b.WriteString(h.name + ":" + it.header.Get(h.name) + "\x00")
			}
			it.target += "\x00" + b.String()
		}
	}
	return it, nil
}

// renderBody renders the body of one record: the body template, or the
// value (as it is when it is JSON, else as a JSON string; null for a
// tombstone).
func (s *Sink) renderBody(d *recordData) ([]byte, error) {
	if s.set.body != nil {
		var b bytes.Buffer
		if err := s.set.body.render(&b, d); err != nil {
			return nil, fmt.Errorf("render body: %w", err)
		}
		return b.Bytes(), nil
	}
	v := d.rec.Value
	switch {
	case v == nil:
		return []byte("null"), nil
	case json.Valid(v):
		return v, nil
	}
	s2, err := toJSON(string(v))
	return []byte(s2), err
}

// recordMsgID is the delivery id of one record.
func recordMsgID(r *connect.Record) string {
	id := idOf(r)
	return "msg_" + id.topic + "_" + strconv.FormatInt(int64(id.partition), 10) + "_" + strconv.FormatInt(id.offset, 10)
}

// batchMsgID is the delivery id of a batch: a digest of its records'
// topics, partitions and offsets, so that it is the same on every attempt
// and for the same records after a restart, and differs for any other set
// of records.
func batchMsgID(items []*item) string {
	h := sha256.New()
	var buf []byte
	for _, it := range items {
		id := idOf(it.data.rec)
		buf = append(buf[:0], id.topic...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, int64(id.partition), 10)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, id.offset, 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return "msg_b" + hex.EncodeToString(h.Sum(nil)[:16])
}

// newRequest builds the request of items, which share their target.
func (s *Sink) newRequest(items []*item) (*request, error) {
	first := items[0]
	req := &request{items: items, method: first.method, url: first.url, header: first.header.Clone()}
	if s.set.batchSize == 1 {
		req.id, req.body = first.data.ID(), first.body
	} else {
		req.id = batchMsgID(items)
		bodies := make([]json.RawMessage, len(items))
		size := 2
		for i, it := range items {
			bodies[i] = it.body
			size += len(it.body) + 1
		}
		if s.set.batchBody != nil {
			data := &batchData{Items: bodies, Records: make([]*recordData, len(items)), ID: req.id}
			for i, it := range items {
				data.Records[i] = it.data
			}
			var b bytes.Buffer
			if err := s.set.batchBody.render(&b, data); err != nil {
				return nil, fmt.Errorf("render batch.body: %w", err)
			}
			req.body = b.Bytes()
		} else {
			b := make([]byte, 0, size)
			b = append(b, '[')
			for i, body := range bodies {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, body...)
			}
			req.body = append(b, ']')
		}
	}
	if s.set.idemHeader != "" {
		req.header.Set(s.set.idemHeader, req.id)
	}
	return req, nil
}

// stats are the sink's counters, for Report.
type stats struct {
	requests  atomic.Int64 // attempts sent
	retries   atomic.Int64 // attempts that will be retried
	delivered atomic.Int64 // records delivered
	failed    atomic.Int64 // records failed (dead-lettered or failing the task)
	inFlight  atomic.Int64 // requests in flight
}

// Report returns the sink's counters.
func (s *Sink) Report() connect.Report {
	return connect.Report{Gauges: map[string]float64{
		"webhook_requests":           float64(s.stats.requests.Load()),
		"webhook_retries":            float64(s.stats.retries.Load()),
		"webhook_delivered_records":  float64(s.stats.delivered.Load()),
		"webhook_failed_records":     float64(s.stats.failed.Load()),
		"webhook_requests_in_flight": float64(s.stats.inFlight.Load()),
	}}
}
