package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// Defaults of Options.
const (
	DefaultCallTimeout  = 30 * time.Second
	DefaultReadWait     = time.Second
	DefaultStartTimeout = 10 * time.Second
)

// Options configure a Host.
type Options struct {
	// Logger receives the plugins' output (tagged plugin=<name>) and the
	// host's warnings; nil discards them.
	Logger *slog.Logger
	// CallTimeout is the deadline of every call to a plugin (Open, Write,
	// Ack, Flush, Close, ...); a plugin that has not answered by then is
	// deemed hung and killed. Default DefaultCallTimeout.
	CallTimeout time.Duration
	// ReadWait is how long a source plugin waits for records before it
	// answers a Read with an empty batch; a Read's deadline is ReadWait
	// plus CallTimeout. Default DefaultReadWait.
	ReadWait time.Duration
	// StartTimeout bounds starting a plugin process and its handshake.
	// Default DefaultStartTimeout.
	StartTimeout time.Duration
	// Pins pins the sha256 (64 hex digits, optionally prefixed "sha256:")
	// of plugin files, by file name (e.g. "counter"): a pipeline's
	// plugins.sha256. They add to the LockFile of each directory; a file
	// pinned in both must match both.
	Pins map[string]string
}

// Host finds plugins and runs their connectors, each instance in a
// process of its own. It is safe for concurrent use. Close stops the
// processes it keeps for itself.
type Host struct {
	opts   Options
	logger *slog.Logger
	// protocol is the newest protocol version the host offers:
	// ProtocolVersion, lower only in tests that play an older host.
	protocol int
	// redactIdle is how long a redacting process outlives its last call:
	// redactIdle, shorter in tests.
	redactIdle time.Duration

	mu        sync.Mutex  // guards redactors and closed
	redactors []*redactor // those of every plugin inspected
	closed    bool
}

// NewHost returns a host with the given options.
func NewHost(opts Options) *Host {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.ReadWait <= 0 {
		opts.ReadWait = DefaultReadWait
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts, logger: logger, protocol: ProtocolVersion, redactIdle: redactIdle}
}

// Close stops the processes the host keeps to apply the plugins'
// connect.Spec.Redact, and keeps them from starting again: from then on
// the specs of those plugins mask the whole value of every setting. It
// does not stop connector instances, which their Close stops. A worker
// calls it last, after stopping its connectors; without it, such a
// process ends a minute after its last call, or with the worker.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	rs := h.redactors
	h.redactors = nil
	h.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}

// newRedactor returns the redactor of p, which Close closes.
func (h *Host) newRedactor(p *Plugin) *redactor {
	r := &redactor{p: p, idle: h.redactIdle}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		r.closed = true
	} else {
		h.redactors = append(h.redactors, r)
	}
	return r
}

// Plugin is a file found in a plugin directory: a usable plugin, with what
// it said about itself, or not (Err says why).
type Plugin struct {
	Path   string // the executable, absolute
	SHA256 string // the sha256 of the file when it was inspected, in hex
	Pinned string // where its sha256 is pinned ("" when it is not)

	Name        string       // the connector's name, as pipelines use it
	Kind        connect.Kind // source or sink
	Version     string       // the connector's version
	Description string
	Spec        connect.Spec
	Protocol    int // the plugin protocol version it was built with

	// Err is why the file is not a usable plugin; nil when it is one.
	Err error

	flusher  bool
	reporter bool
	durable  bool // the source is a connect.DurableNotifier (protocol 2)
	recovers bool // the source is a connect.TailRecoverer (protocol 2)
	// redactor applies the spec's Redact (protocol 3); nil when the
	// plugin's spec has none, or speaks an older protocol.
	redactor *redactor
	// notProgram: the file is no program at all (not regular, not
	// executable): source files, READMEs and lock files beside plugins are
	// skipped without a warning.
	notProgram bool
	pin        *pin
	host       *Host
}

// Valid reports whether the plugin can be used.
func (p *Plugin) Valid() bool { return p.Err == nil }

// Interfaces names the optional connect interfaces that the plugin's
// connector implements and the worker will call across the boundary (those
// of a protocol version the handshake settled on), e.g.
// "connect.DurableNotifier"; none for a plain source or sink.
func (p *Plugin) Interfaces() []string {
	var out []string
	for _, i := range []struct {
		has  bool
		name string
	}{
		{p.flusher, "connect.Flusher"}, {p.reporter, "connect.Reporter"},
		{p.durable, "connect.DurableNotifier"}, {p.recovers, "connect.TailRecoverer"},
	} {
		if i.has {
			out = append(out, i.name)
		}
	}
	return out
}

// Discover inspects every file in the given directories (not
// subdirectories, hidden files or LockFile) and returns one Plugin per
// file, sorted by directory (in the order given) and file name. A file
// that is not a usable plugin is returned with its Err set and logged as
// a warning; the second of two plugins that give the same kind and name
// is not usable either. The error reports directories that could not be
// read (wrapping fs.ErrNotExist for a missing one); the plugins of the
// others are returned all the same.
func (h *Host) Discover(ctx context.Context, dirs ...string) ([]*Plugin, error) {
	type candidate struct {
		path string
		pin  *pin
		err  error
	}
	var cands []candidate
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin directory: %w%s", err, permissionHint(err, dir, "list it: chmod a+rx")))
			continue
		}
		lock, err := readLockFile(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.HasPrefix(name, ".") || name == LockFile {
				continue
			}
			path, err := filepath.Abs(filepath.Join(dir, name))
			if err != nil {
				errs = append(errs, fmt.Errorf("plugin %s: %w", name, err))
				continue
			}
			pin, err := h.pinFor(path, lock[name])
			cands = append(cands, candidate{path: path, pin: pin, err: err})
		}
	}
	found := make([]*Plugin, len(cands))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, c := range cands {
		g.Go(func() error {
			if c.err != nil {
				found[i] = &Plugin{Path: c.path, Err: c.err, host: h}
				return nil
			}
			found[i] = h.inspect(gctx, c.path, c.pin)
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seen := make(map[string]*Plugin)
	for _, p := range found {
		if p.Err != nil {
			continue
		}
		key := string(p.Kind) + "/" + p.Name
		if first, dup := seen[key]; dup {
			p.Err = fmt.Errorf("plugin %s: the %s connector %q is provided by %s already, which comes first", p.Path, p.Kind, p.Name, first.Path)
			continue
		}
		seen[key] = p
	}
	for _, p := range found {
		switch {
		case p.Err == nil:
		case p.notProgram:
			h.logger.Debug("skipping a file in a plugin directory that is not a program", "path", p.Path, "reason", p.Err.Error())
		default:
			h.logger.Warn("skipping a file in a plugin directory that is not a usable plugin", "path", p.Path, "reason", p.Err.Error())
		}
	}
	return found, errors.Join(errs...)
}

// permissionHint is the advice that ends an error about a plugin file or
// directory the worker's user may not use: what it may not do and the
// chmod that allows it (what is "verb: mode", path where to apply it).
// It is "" for any other error.
func permissionHint(err error, path, what string) string {
	if !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	verb, mode, _ := strings.Cut(what, ": ")
	return fmt.Sprintf("; the worker's user (uid %d) may not %s: %s %s, or make that user its owner", os.Geteuid(), verb, mode, path)
}

// Inspect inspects one plugin file: it checks its pin (Options.Pins and the
// LockFile of its directory), starts it, asks what it is, and stops it.
// The Plugin's Err says why the file is not a usable plugin.
func (h *Host) Inspect(ctx context.Context, path string) *Plugin {
	abs, err := filepath.Abs(path)
	if err != nil {
		return &Plugin{Path: path, Err: fmt.Errorf("plugin %s: %w", path, err), host: h}
	}
	lock, err := readLockFile(filepath.Dir(abs))
	if err != nil {
		return &Plugin{Path: abs, Err: err, host: h}
	}
	pin, err := h.pinFor(abs, lock[filepath.Base(abs)])
	if err != nil {
		return &Plugin{Path: abs, Err: err, host: h}
	}
	return h.inspect(ctx, abs, pin)
}

// pinFor returns the pin of the plugin file at path: from Options.Pins or
// the lock file, which must agree when both pin it.
func (h *Host) pinFor(path string, locked *pin) (*pin, error) {
	name := filepath.Base(path)
	s, ok := h.opts.Pins[name]
	if !ok {
		return locked, nil
	}
	opt, err := parsePin(s, "the pipeline's plugins.sha256")
	if err != nil {
		return nil, &Error{kind: ErrChecksumMismatch, msg: err.Error()}
	}
	if locked != nil && string(locked.sum) != string(opt.sum) {
		return nil, &Error{kind: ErrChecksumMismatch, msg: fmt.Sprintf("plugin %s: %s pins it to %x, but %s to %x; make them agree",
			path, opt.origin, opt.sum, locked.origin, locked.sum)}
	}
	return opt, nil
}

func (h *Host) inspect(ctx context.Context, path string, pin *pin) *Plugin {
	p := &Plugin{Path: path, pin: pin, host: h}
	if pin != nil {
		p.Pinned = pin.origin
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		p.Err = fmt.Errorf("plugin %s: %w%s", path, err, permissionHint(err, filepath.Dir(path), "reach it: chmod a+x"))
		return p
	case !fi.Mode().IsRegular():
		p.Err = &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("%s is not a regular file", path)}
		p.notProgram = true
		return p
	case fi.Mode().Perm()&0o111 == 0:
		p.Err = &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("%s is not executable (chmod +x it if it is a plugin)", path)}
		p.notProgram = true
		return p
	}
	if p.SHA256, err = fileSHA256(path); err != nil {
		p.Err = fmt.Errorf("plugin %s: %w%s", path, err, permissionHint(err, path, "read it: chmod a+r"))
		return p
	}
	if err := ctx.Err(); err != nil {
		p.Err = err
		return p
	}
	proc, err := h.start(path, filepath.Base(path), pin)
	if err != nil {
		p.Err = err
		return p
	}
	defer proc.end(true)
	d, err := h.describe(ctx, proc)
	if err != nil {
		p.Err = err
		return p
	}
	p.Name, p.Kind, p.Version, p.Description = d.Name, connect.Kind(d.Kind), d.Version, d.Description
	var unknown []string
	p.Spec, unknown = fromPBParams(d.Params)
	p.Protocol, p.flusher, p.reporter = int(d.Protocol), d.Flusher, d.Reporter
	p.durable, p.recovers = sourceExtras(proc, d)
	if len(unknown) > 0 {
		h.logger.Warn("a plugin's parameters have formats this Tributary does not know: their values are not checked for them before Open",
			"plugin", d.Name, "path", path, "params", strings.Join(unknown, ", "))
	}
	if proc.version >= protocolRedactStop && d.Redactor {
		p.redactor = h.newRedactor(p)
		p.Spec.Redact = p.redactor.redact
	}
	if err := connect.NewRegistry().Register(p.Connector()); err != nil {
		p.Err = &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("plugin %s describes an invalid connector: %v", path, err)}
	}
	return p
}

// sourceExtras returns which of the optional source interfaces of
// protocol version 2 the plugin's source implements: none when the
// handshake settled on an older version, whose plugins have no such calls.
func sourceExtras(proc *process, d *pluginpb.DescribeResponse) (durable, recovers bool) {
	if proc.version < protocolSourceExtras || connect.Kind(d.Kind) != connect.KindSource {
		return false, false
	}
	return d.DurableNotifier, d.TailRecoverer
}

func (h *Host) describe(ctx context.Context, proc *process) (*pluginpb.DescribeResponse, error) {
	var d *pluginpb.DescribeResponse
	err := proc.call(ctx, "describe", h.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		var err error
		d, err = proc.rpc.Describe(ctx, &pluginpb.DescribeRequest{})
		return nil, err
	})
	return d, err
}

// Connector returns the connector the plugin provides, for a
// connect.Registry: each instance that NewSource or NewSink makes starts
// a plugin process of its own in Open and stops it in Close. The Spec is
// the one the plugin gave, so that validation and masking work as for a
// built-in: its Redact, if the plugin's has one, asks the plugin.
func (p *Plugin) Connector() connect.Connector {
	c := connect.Connector{Name: p.Name, Kind: p.Kind, Version: p.Version, Description: p.Description, Spec: p.Spec}
	switch p.Kind {
	case connect.KindSource:
		c.NewSource = func() connect.Source { return newSource(p) }
	case connect.KindSink:
		c.NewSink = func() connect.Sink { return newSink(p) }
	}
	return c
}

// Register registers the connectors of the usable plugins into r. A
// plugin whose kind and name r already holds (a built-in connector, say)
// is not registered: its Err is set, and the error lists every such
// plugin.
func Register(r *connect.Registry, plugins []*Plugin) error {
	var errs []error
	for _, p := range plugins {
		if !p.Valid() {
			continue
		}
		if err := r.Register(p.Connector()); err != nil {
			p.Err = fmt.Errorf("plugin %s: the %s connector %q is registered already (a built-in connector, or another plugin)", p.Path, p.Kind, p.Name)
			errs = append(errs, p.Err)
		}
	}
	return errors.Join(errs...)
}

// Explain says why a pipeline cannot use the connector of the given kind
// and name when plugins explain it: a file in a plugin directory named
// after it is not a usable plugin, or a plugin of that name is of the
// other kind. It returns nil when no plugin is about that name.
func Explain(plugins []*Plugin, kind connect.Kind, name string) error {
	for _, p := range plugins {
		if p.Valid() && p.Name == name && p.Kind != kind {
			return fmt.Errorf("%s connector %q: the plugin %s provides a %s connector of that name, not a %s", kind, name, p.Path, p.Kind, kind)
		}
	}
	for _, p := range plugins {
		if p.Valid() {
			continue
		}
		base := strings.TrimSuffix(filepath.Base(p.Path), filepath.Ext(p.Path))
		if p.Name == name || base == name || strings.TrimPrefix(base, "tributary-") == name {
			return fmt.Errorf("%s connector %q: the plugin file %s is not usable: %w", kind, name, p.Path, p.Err)
		}
	}
	return nil
}
