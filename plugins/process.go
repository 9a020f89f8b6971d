package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// exitWait is how long a failed call waits for the process to finish
// exiting (and its last stderr lines to arrive) before killing it.
const exitWait = time.Second

// stopGrace is how long a stop waits for the process to exit after asking
// it to, before killing it.
const stopGrace = 5 * time.Second

// process is one running plugin process and the gRPC client that talks to
// it. Calls may come from several goroutines (a source's Read and Ack).
type process struct {
	name    string // the connector's name, or the file's before it is known
	path    string
	pid     int
	version int // the protocol version negotiated in the handshake
	client  *goplugin.Client
	cmd     *exec.Cmd
	rpc     pluginpb.ConnectorClient
	tail    *tail
	writers []*lineWriter
	logger  *slog.Logger // the host's, with the plugin's name

	endOnce sync.Once // kill or stop, whichever comes first

	mu       sync.Mutex // guards failed and killed
	failed   error      // set once the process is dead or hung: every call returns it
	killed   bool       // the host killed the process (a hang, a failed stop)
	stateMsg string     // how the process ended, once it has
}

// start starts the plugin at path and connects to it. pin is the sha256
// the file must have, or nil.
func (h *Host) start(path, name string, pin *pin) (*process, error) {
	logger := h.logger.With("plugin", name)
	t := &tail{}
	raw := &lineWriter{logger: logger, stream: "stderr", tail: t, raw: true}
	stdout := &lineWriter{logger: logger, stream: "stdout"}
	stderr := &lineWriter{logger: logger, stream: "stderr", tail: t}
	cmd := exec.Command(path)
	inOwnProcessGroup(cmd)
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  handshake(uint(h.protocol)),
		VersionedPlugins: versionedPlugins(&grpcPlugin{}, h.protocol),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     h.opts.StartTimeout,
		Stderr:           raw,
		SyncStdout:       stdout,
		SyncStderr:       stderr,
		// go-plugin's own logger stays off: it would parse the plugin's
		// stderr lines itself, and a JSON line with a non-string
		// "@message" panics its parser. lineWriter reads them instead.
		Logger:   hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: io.Discard, Level: hclog.Off}),
		AutoMTLS: true,
	}
	if pin != nil {
		cfg.SecureConfig = &goplugin.SecureConfig{Checksum: pin.sum, Hash: sha256.New()}
	}
	p := &process{name: name, path: path, client: goplugin.NewClient(cfg), cmd: cmd, tail: t, logger: logger,
		writers: []*lineWriter{raw, stdout, stderr}}
	rpcClient, err := p.client.Client()
	var conn any
	if err == nil {
		conn, err = rpcClient.Dispense(pluginKey)
	}
	if err != nil {
		p.end(false)
		return nil, p.startError(err, pin, h.protocol, h.opts.StartTimeout)
	}
	p.rpc = conn.(pluginpb.ConnectorClient)
	p.pid = cmd.Process.Pid
	p.version = p.client.NegotiatedVersion()
	return p, nil
}

// versionRE finds the plugin's version in go-plugin's handshake error.
var versionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// startError explains why a plugin did not start; newest is the newest
// protocol version the host offered, startTimeout how long it had for the
// handshake.
func (p *process) startError(err error, pin *pin, newest int, startTimeout time.Duration) error {
	msg := err.Error()
	switch {
	case errors.Is(err, goplugin.ErrChecksumsDoNotMatch):
		got, herr := fileSHA256(p.path)
		if herr != nil {
			got = "unknown (" + herr.Error() + ")"
		}
		return &Error{kind: ErrChecksumMismatch, msg: fmt.Sprintf(
			"plugin %s: its sha256 is %s, but %s pins it to %s; it was not started. If the new file is one you trust, update the pin",
			p.path, got, pin.origin, hex.EncodeToString(pin.sum))}
	case strings.Contains(msg, "incompatible API version"):
		theirs := "another"
		newer := false
		if m := versionRE.FindStringSubmatch(msg); m != nil {
			theirs = m[1]
			n, _ := strconv.Atoi(theirs)
			newer = n > newest
		}
		fix := ""
		if newer {
			fix = " (or run a newer Tributary, one that speaks version " + theirs + ")"
		}
		return &Error{kind: ErrProtocolMismatch, msg: fmt.Sprintf(
			"plugin %s speaks plugin protocol version %s, but this Tributary speaks versions %d to %d: rebuild the plugin with a github.com/tributary-io/tributary module whose plugins.ProtocolVersion is %d%s",
			p.path, theirs, MinProtocolVersion, newest, newest, fix)}
	case errors.Is(err, fs.ErrPermission) || strings.Contains(msg, "permission denied"):
		return &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("%s could not be started: %s%s", p.path, firstLine(msg),
			permissionHint(fs.ErrPermission, p.path, "run it: chmod a+x"))}
	case strings.Contains(msg, "exec format error"):
		return &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("%s is not a program this machine can run: %s", p.path, firstLine(msg))}
	}
	detail := firstLine(msg)
	switch {
	case strings.TrimSpace(detail) == "Unrecognized remote plugin message:":
		detail = "it wrote no handshake line to its standard output"
	case strings.Contains(detail, "timeout while waiting for plugin to start"):
		detail = fmt.Sprintf("it wrote no handshake line within %s, and was killed", startTimeout)
	}
	e := &Error{kind: ErrNotPlugin, msg: fmt.Sprintf("%s is not a Tributary plugin (it did not complete the plugin handshake: %s)", p.path, detail)}
	if lines := p.tail.last(); len(lines) > 0 {
		e.msg += "; its last stderr lines:\n\t" + strings.Join(lines, "\n\t")
	}
	return e
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// call runs one RPC with a deadline. fn returns the connector's error
// from the response, or the RPC's error. An RPC error other than one the
// caller caused means the process died or hangs: the process is killed,
// and this and every later call return a *ProcessError with its last
// stderr lines.
func (p *process) call(ctx context.Context, op string, timeout time.Duration, fn func(context.Context) (*pluginpb.Error, error)) error {
	if err := p.failure(); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	perr, err := fn(cctx)
	cancel()
	if err == nil {
		return fromPBError(perr)
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller gave up: not the plugin's fault
	}
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.InvalidArgument:
		return fmt.Errorf("plugin %s: %s: %s", p.name, op, status.Convert(err).Message())
	}
	return p.fail(op, timeout, err)
}

func (p *process) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// fail kills the process after a failed call and returns the error to
// report.
func (p *process) fail(op string, timeout time.Duration, err error) error {
	hung := status.Code(err) == codes.DeadlineExceeded
	if !hung {
		// A crash breaks the connection at once; give the process a moment
		// to be reaped, so that its last stderr lines are in the tail.
		deadline := time.Now().Add(exitWait)
		for !p.client.Exited() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	p.end(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed != nil {
		return p.failed // a concurrent call failed first
	}
	var reason string
	switch {
	case hung:
		reason = fmt.Sprintf("no answer within %s (the call's deadline): the plugin hangs, and its process was killed", timeout)
	case !p.killed:
		reason = "the plugin process exited (" + p.stateMsg + ")"
	default:
		reason = fmt.Sprintf("the call failed (%s), and the plugin process was killed", status.Convert(err).Message())
	}
	p.failed = &ProcessError{Plugin: p.name, Path: p.path, PID: p.pid, Op: op, Reason: reason, Stderr: p.tail.last(), Err: err}
	return p.failed
}

// end ends the process, once: gracefully (go-plugin asks it to shut down,
// then kills it after a grace period), or with SIGKILL at once. Either way
// what the process started dies with it (its process group). It returns
// when the process is gone and its output read, or, when something outside
// the group still holds its output open, exitWait after the kill.
func (p *process) end(graceful bool) {
	p.endOnce.Do(func() {
		killNow := func() {
			if p.cmd.Process == nil {
				return
			}
			if !p.client.Exited() {
				p.mu.Lock()
				p.killed = true
				p.mu.Unlock()
				_ = p.cmd.Process.Kill()
			}
			// Its children too, even once it is gone: they hold its output.
			killProcessGroup(p.cmd.Process.Pid)
		}
		if !graceful {
			killNow()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.client.Kill()
		}()
		select {
		case <-done:
		case <-time.After(stopGrace):
			killNow()
			select {
			case <-done:
			case <-time.After(exitWait):
				// The goroutine ends when the output is closed at last.
				p.logger.Warn("a plugin process was killed, but something it started still holds its output open", "path", p.path)
			}
		}
		for _, w := range p.writers {
			w.flush()
		}
		p.mu.Lock()
		if st := p.cmd.ProcessState; st != nil {
			p.stateMsg = st.String()
		} else {
			p.stateMsg = "unknown exit status"
		}
		p.mu.Unlock()
	})
}

// ProcessError is a call to a plugin that failed because the plugin
// process died or hung; the task that made it fails, and its process is
// gone. It shows the plugin's last stderr lines.
type ProcessError struct {
	Plugin string   // the connector's name
	Path   string   // the executable
	PID    int      // the process that failed
	Op     string   // the call: open, read, ack, durable, recover tail, write, flush, close
	Reason string   // what happened to the process
	Stderr []string // its last stderr lines, oldest first
	Err    error    // the gRPC error of the call
}

func (e *ProcessError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %s (%s, pid %d): %s: %s", e.Plugin, filepath.Base(e.Path), e.PID, e.Op, e.Reason)
	if len(e.Stderr) == 0 {
		b.WriteString("; it wrote nothing to stderr")
	} else {
		b.WriteString("; its last stderr lines:")
		for _, l := range e.Stderr {
			b.WriteString("\n\t")
			b.WriteString(l)
		}
	}
	return b.String()
}

func (e *ProcessError) Unwrap() error { return e.Err }

// Sentinels that errors about plugin files wrap; errors.Is tells them
// apart.
var (
	// ErrNotPlugin: the file is not a Tributary plugin (not executable,
	// not a program, or it did not complete the handshake).
	ErrNotPlugin = errors.New("not a tributary plugin")
	// ErrProtocolMismatch: the plugin speaks another version of the plugin
	// protocol.
	ErrProtocolMismatch = errors.New("plugin protocol version mismatch")
	// ErrChecksumMismatch: the file's sha256 is not the one it is pinned to.
	ErrChecksumMismatch = errors.New("plugin checksum mismatch")
)

// Error is an error about a plugin file; it wraps one of the sentinels.
type Error struct {
	kind error
	msg  string
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.kind }

// fileSHA256 returns the hex sha256 of a file.
func fileSHA256(path string) (string, error) {
	sum, err := hashFile(path)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum), nil
}
