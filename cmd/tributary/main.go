// Command tributary is the Tributary binary: the partition log's command
// line (topics, produce, consume, groups) on a data directory, and later the
// worker.
//
// main only wires the process: signals, the real stdin/stdout/stderr and the
// exit code. Everything else is in run, which tests call directly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tributary-io/tributary/internal/procs"
)

// Exit codes, decided here and nowhere else.
const (
	exitOK          = 0
	exitError       = 1   // the command failed
	exitUsage       = 2   // bad flags or arguments
	exitInterrupted = 130 // stopped by SIGINT/SIGTERM before it could finish
)

func main() {
	procs.Tune()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(report(os.Stderr, err))
}

// report prints err (if any) and returns the exit code for it.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		if ue.cmd != "" {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", ue.cmd)
		}
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitError
	}
}

// usageError is a mistake in how the command was called (exit code 2).
type usageError struct {
	cmd string // command path for the --help hint, e.g. "tributary topics create"
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}
