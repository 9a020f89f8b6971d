package plugins

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// Tunables of a redactor.
const (
	// redactTimeout bounds one Redact call (at most Options.CallTimeout):
	// a REST answer or a log line waits for it.
	redactTimeout = 2 * time.Second
	// redactIdle is how long a redactor's process lives after its last
	// call; the next one starts it again.
	redactIdle = time.Minute
	// redactRetry is how long a redactor whose process did not start or
	// answer masks whole values without trying again.
	redactRetry = 10 * time.Second
	// redactCacheSize bounds the answers a redactor remembers; it forgets
	// them all when full. Configurations are few and repeat (status,
	// config and log lines show the same values again and again).
	redactCacheSize = 1024
)

// redactor is the host side of a plugin's connect.Spec.Redact (protocol
// version 3): the func it puts into the plugin's Spec asks a plugin
// process of its own, since Mask is called for REST answers and log lines
// whether or not an instance runs. The process starts at the first value
// not in the cache and stops after redactIdle without calls, or at
// Host.Close. When the plugin cannot answer, the value shows as
// connect.Masked as a whole: a secret must not show because the plugin is
// broken.
type redactor struct {
	p    *Plugin
	idle time.Duration

	mu      sync.Mutex // guards the fields below; held while starting proc
	proc    *process   // nil when none runs
	calls   int        // Redact calls in flight on proc
	timer   *time.Timer
	retryAt time.Time // after a failure: mask whole values until then
	closed  bool
	cache   map[redactKey]string
	ends    sync.WaitGroup // idle processes being ended by the timer
}

type redactKey struct{ name, value string }

// redact is the plugin's connect.Spec.Redact.
func (r *redactor) redact(name, value string) string {
	if value == "" {
		return value
	}
	key := redactKey{name, value}
	proc, out, ok := r.acquire(key)
	if ok {
		return out
	}
	if proc == nil {
		return connect.Masked
	}
	out, err := r.call(proc, name, value)
	r.release(proc, key, out, err)
	if err != nil {
		r.p.host.logger.Warn("a plugin did not redact a setting, which shows masked as a whole", "plugin", r.p.Name,
			"setting", name, "error", err.Error())
		return connect.Masked
	}
	return out
}

// acquire returns the cached answer for key (ok), or the process to ask,
// started if need be (nil: mask the whole value).
func (r *redactor) acquire(key redactKey) (proc *process, out string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out, ok := r.cache[key]; ok {
		return nil, out, true
	}
	if r.closed || time.Now().Before(r.retryAt) {
		return nil, "", false
	}
	if r.proc != nil && r.proc.failure() != nil {
		r.proc = nil // killed by a failed call, which logged why
	}
	if r.proc == nil {
		proc, err := r.start()
		if err != nil {
			r.retryAt = time.Now().Add(redactRetry)
			r.p.host.logger.Warn("a plugin's redacting process did not start: its settings show masked as a whole for a while",
				"plugin", r.p.Name, "retry", redactRetry, "error", err.Error())
			return nil, "", false
		}
		r.proc = proc
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.calls++
	return r.proc, "", false
}

// start starts a process and checks that it still redacts as the one
// inspected did.
func (r *redactor) start() (*process, error) {
	h := r.p.host
	proc, err := h.start(r.p.Path, r.p.Name, r.p.pin)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.CallTimeout)
	defer cancel()
	d, err := h.describe(ctx, proc)
	if err == nil && (d.Name != r.p.Name || connect.Kind(d.Kind) != r.p.Kind || !d.Redactor || proc.version < protocolRedactStop) {
		err = fmt.Errorf("plugin %s no longer provides the %s connector %q with a connect.Spec.Redact of protocol version %d (now the %s connector %q, redact %t, protocol version %d): restart the worker to load plugins again",
			r.p.Path, r.p.Kind, r.p.Name, protocolRedactStop, d.Kind, d.Name, d.Redactor, proc.version)
	}
	if err != nil {
		proc.end(proc.failure() == nil)
		return nil, err
	}
	return proc, nil
}

func (r *redactor) call(proc *process, name, value string) (string, error) {
	var out string
	timeout := min(redactTimeout, r.p.host.opts.CallTimeout)
	err := proc.call(context.Background(), "redact", timeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Redact(ctx, &pluginpb.RedactRequest{Name: name, Value: value})
		if err != nil {
			return nil, err
		}
		out = resp.Value
		return nil, nil
	})
	return out, err
}

// release ends a call: it caches the answer, and arms the idle timer once
// no call is in flight.
func (r *redactor) release(proc *process, key redactKey, out string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls--
	if err != nil {
		r.retryAt = time.Now().Add(redactRetry)
	} else {
		if len(r.cache) >= redactCacheSize {
			clear(r.cache)
		}
		if r.cache == nil {
			r.cache = make(map[redactKey]string)
		}
		r.cache[key] = out
	}
	if r.calls > 0 || r.proc != proc || r.closed {
		return
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(r.idle, r.endIdle)
	} else {
		r.timer.Reset(r.idle)
	}
}

// endIdle ends the process after redactIdle without calls.
func (r *redactor) endIdle() {
	r.mu.Lock()
	proc := r.proc
	if proc == nil || r.calls > 0 || r.closed {
		r.mu.Unlock()
		return
	}
	r.proc = nil
	r.ends.Add(1)
	r.mu.Unlock()
	defer r.ends.Done()
	proc.end(proc.failure() == nil)
}

// close ends the process and keeps it from starting again: the spec masks
// whole values from then on. It waits for calls in flight only as long as
// their deadline, as ending the process fails them.
func (r *redactor) close() {
	r.mu.Lock()
	r.closed = true
	proc := r.proc
	r.proc = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	if proc != nil {
		proc.end(proc.failure() == nil)
	}
	r.ends.Wait()
}
