// Package procs sets how many goroutines the tributary process runs at
// once (the Go runtime's GOMAXPROCS), for the binary and for the benchmark
// harnesses that measure its parts, so both run alike.
//
// A goroutine in a blocking system call keeps its P (its right to run Go
// code) until the runtime's monitor takes the P back, and on a machine with
// few cores that often happens only after the call returned. Tributary's
// hot paths are full of such calls — the log's pwrite and fdatasync, the
// file sink's write and fsync — so with GOMAXPROCS equal to the cores,
// runnable goroutines (HTTP handlers, encoders, the sink) wait while a core
// idles in an fsync. Two more Ps than the runtime's default let them run.
// Measured on the 2-core VM at load 1–2 (GOMAXPROCS=2 vs 4, alternating):
// single-event durable HTTP requests +17%, batches +25%
// (bench/httptrack), generator → log → file sink +10% (bench/engine), with
// the same CPU per request or record.
package procs

import (
	"os"
	"runtime"
)

// Extra is how many Ps Tune adds to the runtime's default (the CPUs the
// process may use, as the runtime reads them from the machine or its
// cgroup's quota).
const Extra = 2

// Tune raises GOMAXPROCS by Extra, unless the GOMAXPROCS environment
// variable is set (then the runtime already took it, and it wins). It
// returns GOMAXPROCS in effect. Call it first in main, before anything
// sizes itself by GOMAXPROCS.
func Tune() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	n := runtime.GOMAXPROCS(0) + Extra
	runtime.GOMAXPROCS(n)
	return n
}
