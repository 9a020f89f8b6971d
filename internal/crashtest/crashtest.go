// Package crashtest runs a test binary's own test as a child process that
// the test kills with SIGKILL mid-work, for the crash tests of the worker
// and the connectors: nothing acknowledged before the kill may be lost.
//
// The parent calls Start with the name of the test and an environment
// variable; in the child, the same test sees that variable when it calls
// Child, which starts the work, says "ready" on stdout and runs until it is
// killed (or its stdin closes because the parent is gone).
package crashtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// StartTimeout bounds how long a child may take to say it is ready.
const StartTimeout = time.Minute

// Child runs start in the child process when the environment variable env
// is set, passing its value, and never returns then: it says "ready" once
// start returned, and exits when its stdin closes (status 2), or with
// status 3 when start fails. Without env it returns at once, and the test
// goes on as the parent.
func Child(env string, start func(value string) error) {
	value := os.Getenv(env)
	if value == "" {
		return
	}
	stdinClosed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	if err := start(value); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	<-stdinClosed
	os.Exit(2)
}

// Proc is a running child process.
type Proc struct {
	t      testing.TB
	what   string // names the child in failures, e.g. "run 3"
	cmd    *exec.Cmd
	stdin  io.Closer
	stderr syncbuf.Buffer
	ready  *readyWriter // stdout
	exited chan error
	killed bool // Kill reaped it
}

// Start runs the test called test (an exact name) of this test binary as a
// child with env ("NAME=value" entries) added to its environment, and waits
// until the child is ready. what names the child in failures ("run 3").
// Kill it when done.
func Start(t testing.TB, what, test string, env ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, what: what, exited: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$")
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	ready := &readyWriter{ready: make(chan struct{})}
	p.ready = ready
	p.cmd.Stdout = ready
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		stdin.Close()
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	select {
	case <-ready.ready:
	case err := <-p.exited:
		p.killed = true
		stdin.Close()
		t.Fatalf("%s: child exited before it started: %v\n%s", what, err, p.Stderr())
	case <-time.After(StartTimeout):
		p.Kill()
		t.Fatalf("%s: child did not start within %v\n%s", what, StartTimeout, p.Stderr())
	}
	return p
}

// Sleep lets the child work for d; the child exiting on its own meanwhile
// fails the test.
func (p *Proc) Sleep(d time.Duration) {
	p.t.Helper()
	select {
	case err := <-p.exited:
		p.t.Fatalf("%s: child exited on its own: %v\n%s", p.what, err, p.Stderr())
	case <-time.After(d):
	}
}

// WaitFor polls cond every 10 ms until it holds; the child exiting, or
// timeout passing, fails the test (and kills the child), saying what was
// awaited.
func (p *Proc) WaitFor(cond func() bool, timeout time.Duration, what string) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.Kill()
			p.t.Fatalf("%s: %s: not within %v\n%s", p.what, what, timeout, p.Stderr())
		}
		p.Sleep(10 * time.Millisecond)
	}
}

// Kill sends SIGKILL and reaps the child; the child ending otherwise (it
// exited on its own meanwhile) fails the test, and errors it logged (slog
// text, level=ERROR) are shown. Killing twice does nothing.
func (p *Proc) Kill() {
	if p.killed {
		return
	}
	p.killed = true
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("%s: kill: %v", p.what, err)
	}
	err := <-p.exited
	p.stdin.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		p.t.Errorf("%s: child ended with %v, not by SIGKILL\n%s", p.what, err, p.Stderr())
	} else if s := p.Stderr(); strings.Contains(s, "level=ERROR") {
		p.t.Logf("%s: the child logged errors:\n%s", p.what, s)
	}
}

// Last returns the rest of the last line the child printed on stdout that
// starts with word and a space (say "offset {...}"), and whether there was
// one: a way for a child to report its progress.
func (p *Proc) Last(word string) (string, bool) {
	p.ready.mu.Lock()
	defer p.ready.mu.Unlock()
	v, ok := p.ready.last[word]
	return v, ok
}

// Stderr is what the child wrote to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// readyWriter takes a child's stdout line by line: it closes ready when
// the child says "ready", and keeps the last line starting with each word
// for Last.
type readyWriter struct {
	mu      sync.Mutex
	partial []byte
	once    sync.Once
	ready   chan struct{}
	last    map[string]string
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if line == "ready" {
			w.once.Do(func() { close(w.ready) })
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if w.last == nil {
			w.last = map[string]string{}
		}
		w.last[word] = rest
	}
	return len(p), nil
}
