package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// excerptBytes is how much of an error answer's body goes into the error.
const excerptBytes = 512

// drainBytes is how much of an answer's body is read to reuse the
// connection; a longer body closes it.
const drainBytes = 64 << 10

// batchScan bounds how many ready lanes a batch looks through for items
// with its target, in batch.size units.
const batchScan = 4

// result is what became of one request.
type result struct {
	req      *request
	err      error // nil: delivered; else why its records failed
	fatal    error // the task must fail: nothing would get through
	canceled bool  // the context ended first: nothing is known
}

// deliver sends the items: the items of one lane one request after the
// other, different lanes concurrently up to concurrency requests. It sets
// the outcome of every item it finishes. It returns ctx.Err() when ctx
// ended, or the fatal error of a request, after every request in flight
// has returned.
//
// A stop request (connect.Stopping) lets requests to a healthy receiver
// finish, but cuts short a request that is retrying, or any request while
// the receiver is failing: then the whole delivery ends at once (the batch
// cannot be delivered in full, so it will be written again), and deliver
// returns an error wrapping connect.ErrStopping.
func (s *Sink) deliver(ctx context.Context, items []*item, out []outcome) error {
	if len(items) == 0 {
		return nil
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sctx, stopCancel := connect.Stopping(dctx)
	defer stopCancel()
	stopped := false
	// The lanes with an item to send and none in flight, in the order of
	// their first item; a lane re-enters at the back when its request
	// returns.
	ready := make([]*lane, 0, len(items))
	for _, it := range items {
		if it.lane.items[0] == it {
			ready = append(ready, it.lane)
		}
	}
	results := make(chan result, s.set.concurrency)
	inFlight := 0
	var fatal error
	for {
		for fatal == nil && dctx.Err() == nil && inFlight < s.set.concurrency && len(ready) > 0 {
			var taken []*item
			taken, ready = s.take(ready)
			req, err := s.newRequest(taken)
			if err != nil {
				s.finish(result{req: &request{items: taken}, err: connect.Permanent(s.mask.Error(err))}, out, &ready)
				continue
			}
			inFlight++
			s.stats.inFlight.Add(1)
			go func() { results <- s.send(dctx, sctx, req) }()
		}
		if inFlight == 0 {
			break
		}
		r := <-results
		inFlight--
		s.stats.inFlight.Add(-1)
		switch {
		case r.fatal != nil:
			if fatal == nil {
				fatal = r.fatal
				cancel()
			}
		case r.canceled:
			if !stopped && errors.Is(context.Cause(sctx), connect.ErrStopping) {
				// Cut short by a stop: the rest need not be tried.
				stopped = true
				cancel()
			}
		default:
			s.finish(r, out, &ready)
		}
	}
	if fatal != nil {
		return fatal
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if stopped {
		return fmt.Errorf("webhook sink: delivery cut short while the receiver fails: %w", connect.ErrStopping)
	}
	return nil
}

// finish records the outcome of a request's items and puts their lanes
// back in the ready queue when they have more to send. A lane whose item
// failed stops there: the later records of its key stay pending, and are
// sent by a later Write once the worker has dead-lettered the failed one
// (or not at all, when the task fails), so that a receiver never gets a
// key's record after an earlier one of that key that it did not get.
func (s *Sink) finish(r result, out []outcome, ready *[]*lane) {
	for _, it := range r.req.items {
		if r.err != nil {
			out[it.idx] = outcome{state: failed, err: r.err}
			s.stats.failed.Add(1)
			continue
		}
		out[it.idx] = outcome{state: delivered}
		s.stats.delivered.Add(1)
		l := it.lane
		if l.next++; l.next < len(l.items) {
			*ready = append(*ready, l)
		}
	}
}

// take takes the items of the next request off the ready lanes: the next
// item of the first lane and, in batch mode, the next items of further
// lanes with the same target, one per lane, up to batch.size. It returns
// them and the lanes still ready.
func (s *Sink) take(ready []*lane) ([]*item, []*lane) {
	first := ready[0].items[ready[0].next]
	if s.set.batchSize == 1 {
		return []*item{first}, ready[1:]
	}
	items := []*item{first}
	var skipped []*lane
	i := 1
	for limit := batchScan * s.set.batchSize; i < len(ready) && len(items) < s.set.batchSize && i <= limit; i++ {
		it := ready[i].items[ready[i].next]
		if it.target == first.target {
			items = append(items, it)
		} else {
			skipped = append(skipped, ready[i])
		}
	}
	if len(skipped) == 0 {
		return items, ready[i:]
	}
	return items, append(skipped, ready[i:]...)
}

// send delivers one request, retrying as the settings say. The first
// attempt to a receiver that is not failing runs under ctx, which ends
// only when the worker gives up on the task; retries, their waits, a
// hold a receiver asked for with Retry-After, and every attempt while the
// receiver is failing run under stop, which also ends when the worker asks
// the task to stop (connect.Stopping).
func (s *Sink) send(ctx, stop context.Context, req *request) result {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		actx := ctx
		if attempt > 1 || s.failing.Load() {
			actx = stop
		}
		if err := s.lim.wait(actx, stop); err != nil {
			return result{req: req, canceled: true}
		}
		a := s.attempt(actx, req, attempt)
		switch a.class {
		case classDelivered:
			s.failing.Store(false)
			return result{req: req}
		case classCanceled:
			return result{req: req, canceled: true}
		case classFatal:
			return result{req: req, fatal: s.mask.Error(fmt.Errorf("webhook sink: %w", a.err))}
		case classPermanent:
			// The markers go outside the masker: it returns a new error
			// that no longer unwraps to one. Permanent: sending the
			// records again gets the same answer, so without error
			// tolerance the task stays FAILED rather than restarting to
			// send them again and again.
			return result{req: req, err: connect.Permanent(connect.WithAttempts(attempt, s.mask.Error(a.err)))}
		}
		if s.set.maxAttempts > 0 && attempt >= s.set.maxAttempts {
			return result{req: req, err: connect.WithAttempts(attempt, s.mask.Error(fmt.Errorf("gave up after %d attempts in %s (max.attempts): %w", attempt, since(start), a.err)))}
		}
		wait := s.backoff(attempt)
		if a.retryAfter > wait {
			wait = a.retryAfter
		}
		if s.set.maxElapsed > 0 && time.Since(start)+wait > s.set.maxElapsed {
			return result{req: req, err: connect.WithAttempts(attempt, s.mask.Error(fmt.Errorf("gave up after %d attempts in %s (max.elapsed %s): %w", attempt, since(start), s.set.maxElapsed, a.err)))}
		}
		s.failing.Store(true)
		s.stats.retries.Add(1)
		s.log.Debug("webhook delivery failed; retrying", "id", req.id, "attempt", attempt, "wait", wait, "error", s.mask.String(a.err.Error()))
		if err := sleep(stop, wait); err != nil {
			return result{req: req, canceled: true}
		}
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// backoff returns the wait after a failed attempt: a random duration below
// backoff.initial·2^(attempt-1), capped at backoff.max (full jitter).
func (s *Sink) backoff(attempt int) time.Duration {
	ceiling := s.set.backoffMax
	if attempt-1 < 40 {
		if d := s.set.backoffInitial << (attempt - 1); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return rand.N(ceiling) + 1
}

// class is how an attempt ended.
type class uint8

const (
	classDelivered class = iota
	classRetry
	classPermanent
	classFatal
	classCanceled
)

// attemptResult is how one attempt ended.
type attemptResult struct {
	class      class
	err        error
	retryAfter time.Duration // what the receiver asked for
}

// attempt sends a request once.
func (s *Sink) attempt(ctx context.Context, req *request, n int) attemptResult {
	actx, cancel := context.WithTimeout(ctx, s.set.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, req.method, req.url, bytes.NewReader(req.body))
	if err != nil {
		return attemptResult{class: classPermanent, err: fmt.Errorf("%s %s: %w", req.method, req.url, err)}
	}
	hreq.Header = req.header
	if n > 1 {
		// The transport may still hold the header of the previous attempt.
		hreq.Header = req.header.Clone()
	}
	if host := req.header.Get("Host"); host != "" {
		// net/http sends Request.Host, and ignores a Host header.
		hreq.Host = host
	}
	if len(s.set.signingKeys) > 0 {
		ts := time.Now().Unix()
		hreq.Header.Set(headerWebhookID, req.id)
		hreq.Header.Set(headerWebhookTimestamp, strconv.FormatInt(ts, 10))
		hreq.Header.Set(headerWebhookSignature, signature(s.set.signingKeys, req.id, ts, req.body))
	}
	s.stats.requests.Add(1)
	resp, err := s.client.Do(hreq)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return attemptResult{class: classCanceled, err: ctx.Err()}
		case errors.Is(err, context.DeadlineExceeded) || actx.Err() != nil:
			return attemptResult{class: classRetry, err: fmt.Errorf("%s %s: no answer within %s (timeout)", req.method, req.url, s.set.timeout)}
		case untrusted(err):
			return attemptResult{class: classFatal, err: fmt.Errorf("%w; if the receiver's certificate is signed by a private CA, set tls.ca to its PEM file", err)}
		case refusedCertificate(err):
			hint := "the receiver asks for a client certificate (mutual TLS): set tls.cert and tls.key to its PEM files"
			if s.set.clientCert != nil {
				hint = "the receiver refuses the client certificate of tls.cert: give one it trusts (signed by its CA, not expired)"
			}
			return attemptResult{class: classFatal, err: fmt.Errorf("%w; %s", err, hint)}
		}
		return attemptResult{class: classRetry, err: err}
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		io.CopyN(io.Discard, resp.Body, drainBytes)
		return attemptResult{class: classDelivered}
	}
	excerpt := readExcerpt(resp.Body)
	io.CopyN(io.Discard, resp.Body, drainBytes)
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(code)
	}
	msg := fmt.Sprintf("%s %s answered %s", req.method, req.url, status)
	if excerpt != "" {
		msg += ": " + excerpt
	}
	// A status the user listed in retry.statuses is retried, whatever
	// the built-in rule for it (410 and 401 fail the task, other 4xx and
	// 3xx fail the records): the user knows the receiver.
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500, s.set.retryStatuses[code]:
		after := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if after > 0 && (code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable) {
			// The receiver is overloaded, not just this request: hold
			// every request of the sink back.
			s.lim.holdUntil(time.Now().Add(after))
		}
		return attemptResult{class: classRetry, err: errors.New(msg), retryAfter: after}
	case code == http.StatusGone:
		return attemptResult{class: classFatal, err: fmt.Errorf("%s; the receiver says the endpoint is gone: fix url, or remove the sink", msg)}
	case code == http.StatusUnauthorized && !s.set.templatedHeaders:
		// The credentials are the same for every request: none would get
		// through, and failing each record would dead-letter the stream.
		return attemptResult{class: classFatal, err: fmt.Errorf("%s; the receiver refuses the sink's credentials: fix the token or key in headers (or url); until then the task fails and restarts with backoff, and no record is dead-lettered", msg)}
	case code >= 300 && code < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			msg += fmt.Sprintf(" (redirects are not followed; point url at %s)", redirectTarget(hreq.URL, loc))
		}
	}
	return attemptResult{class: classPermanent, err: errors.New(msg)}
}

// redirectTarget returns the absolute URL a Location header points at,
// resolved against the request's URL. A relative Location (/hooks/T1/B2/
// for a trailing slash, ?page=2) is a part of the request's URL; resolved,
// it holds the whole URL again, which the sink's masker masks when the URL
// is a secret (a ${VAR}). A Location that does not parse is returned as
// it is.
func redirectTarget(base *url.URL, loc string) string {
	u, err := url.Parse(loc)
	if err != nil || base == nil {
		return loc
	}
	return base.ResolveReference(u).String()
}

// readExcerpt returns the start of an answer's body as one line of text.
func readExcerpt(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, excerptBytes+1))
	cut := len(b) > excerptBytes
	if cut {
		b = b[:excerptBytes]
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	if cut {
		s += "…"
	}
	return s
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// untrusted reports whether err is a failed verification of the
// receiver's TLS certificate, which no retry can fix.
func untrusted(err error) bool {
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var he x509.HostnameError
	var cie x509.CertificateInvalidError
	return errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &he) || errors.As(err, &cie)
}

// refusedCertificate reports whether err is the receiver's TLS alert that
// it wants a client certificate, or does not accept the one it was given,
// which no retry can fix. Over TCP, crypto/tls reports a received alert
// as a *net.OpError with Op "remote error" around an unexported type.
func refusedCertificate(err error) bool {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || oe.Err == nil {
		return false
	}
	switch oe.Err.Error() {
	case "tls: certificate required", "tls: bad certificate", "tls: unknown certificate authority",
		"tls: expired certificate", "tls: revoked certificate", "tls: unsupported certificate":
		return true
	}
	return false
}
