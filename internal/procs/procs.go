// Package procs sets the Go runtime's process-wide policy for the tributary
// binary and for the benchmark harnesses that measure its parts, so both
// run alike: how many goroutines run at once (GOMAXPROCS) and how much
// memory the garbage collector may let the heap grow to (GOGC with a soft
// memory limit). Tune does both; the environment variables GOMAXPROCS,
// GOGC and GOMEMLIMIT, when set, win.
//
// # GOMAXPROCS
//
// A goroutine in a blocking system call keeps its P (its right to run Go
// code) until the runtime's monitor takes the P back, and on a machine with
// few cores that often happens only after the call returned. Tributary's
// hot paths are full of such calls — the log's pwrite and fdatasync, the
// file sink's write and fsync — so with GOMAXPROCS equal to the cores,
// runnable goroutines (HTTP handlers, encoders, the sink) wait while a core
// idles in an fsync. Measured earlier, two more Ps (GOMAXPROCS 4 vs 2 on
// the 2-core VM, load 1–2): single-event durable HTTP requests +17%,
// batches +25% (bench/httptrack), generator → log → file sink +10%
// (bench/engine). But every P beyond the cores also lets the GC's
// background sweeper and mark workers spin on a P of their own. Measured
// on 2026-11-29 (alternating, CPU per unit from rusage, load 7–16): with
// the default GOGC=100, at GOMAXPROCS 2 / 3 / 4 (4 rounds), 3.1 / 3.35 /
// 3.7 µs per record end to end, 1.07 / 2.04 / 2.17 µs per Kafka record
// consumed through the listener, 4.1 / 4.95 / 5.1 CPU-s per million MySQL
// changes (at 4 the runtime's sweeper took 13% and the scheduler 16% of
// that profile), HTTP requests flat (90–94 µs). With GOGC=400 (below) the
// collector runs a quarter as often and most of that cost goes: 3.0 /
// 2.9–3.2 / 3.15–3.8 µs end to end, 0.73 / 0.74–0.76 / 0.88–1.07 µs per
// record consumed, 3.1 / 3.3–3.4 / 3.5–3.6 CPU-s per million changes; and
// at GOGC=400, load 8, the medians of 4 rounds were 6.7k / 7.8k / 8.4k
// single-event and 1.20k / 1.63k / 1.54k batch HTTP requests/s, 324k /
// 279k / 307k records/s end to end (rounds swing 2–4x on the shared
// machine). So Tune adds one P (Extra): in these runs the throughput of
// two and about the CPU of none. (Not measured: +1 against +2 on an idle
// machine, where the fsync effect above was measured.)
//
// # Garbage collection
//
// At GOGC=100 the collector cost 0.2–0.4 µs of the ~3.2 µs per record end
// to end and 1.6 µs per HTTP request. Against the previous policy
// (GOMAXPROCS+2, GOGC=100), Tune's (GOMAXPROCS+1, GOGC=400 with the
// limit) measured, medians of 6 alternating pairs at load 5–11: end to
// end 3.45 → 2.9 µs per record, Kafka consume 2.17 → 0.73 µs per record
// and produce 1.43 → 1.11, the MySQL source 4.9 → 3.3 CPU-s per million
// changes (its raw binlog read 3.5 → 2.25), HTTP single-event requests
// 93 → 89 µs and batches 597 → 527 µs (load generator included); peak RSS
// grew 238 → 501 MB (bench/engine), 296 → 620 MB (bench/httptrack), 173 →
// 307 MB (bench/kafka). GOGC=200 (GOMAXPROCS 3, 4 rounds, load 12–13)
// kept less of the CPU (3.25 µs per record end to end against 3.35 at
// GOGC=100 and 2.95 at 400, 1.14 µs per record consumed, 3.65 CPU-s per
// million changes) at 310 MB in bench/engine. A higher GOGC alone lets the heap
// grow to five times the live heap whatever the memory, so Tune sets it
// only together with a soft memory limit (runtime/debug.SetMemoryLimit)
// of MemoryLimitFraction of the memory the process may use: its cgroup's
// limit (v2 memory.max, v1 memory.limit_in_bytes, the lowest from its
// cgroup up) or the machine's memory if lower. Near the limit the
// collector runs as often as it must to stay under it; only a live heap
// above 3/8 of that memory, where GOGC=100 would pass the limit too, makes
// it run more often than GOGC=100 would. GOGC or GOMEMLIMIT in the
// environment leaves both to the runtime.
package procs

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
)

// Extra is how many Ps Tune adds to the runtime's default (the CPUs the
// process may use, as the runtime reads them from the machine or its
// cgroup's quota).
const Extra = 1

// GCPercent is the GOGC that Tune sets when neither GOGC nor GOMEMLIMIT is
// in the environment and the memory the process may use is known.
const GCPercent = 400

// MemoryLimitFraction is the share of the memory the process may use (its
// cgroup's limit, or the machine's memory if lower or unlimited) that Tune
// sets as the runtime's soft memory limit along with GCPercent.
const MemoryLimitFraction = 0.75

// Tune sets the policy the package doc describes and returns GOMAXPROCS in
// effect: GOMAXPROCS is the runtime's default plus Extra, unless the
// GOMAXPROCS environment variable is set (the runtime took it already);
// unless GOGC or GOMEMLIMIT is set, GOGC is GCPercent and the soft memory
// limit MemoryLimitFraction of the memory the process may use (neither
// changes if that memory cannot be read: a higher GOGC alone would leave
// the heap unbounded). Call it first in main, before anything sizes itself
// by GOMAXPROCS or allocates much.
func Tune() int {
	return tune("/")
}

// tune is Tune with the files it reads (/proc/meminfo, /proc/self/cgroup,
// /sys/fs/cgroup/...) under root.
func tune(root string) int {
	n := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		n += Extra
		runtime.GOMAXPROCS(n)
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		if limit := memoryLimit(memoryAvailable(root)); limit > 0 {
			debug.SetMemoryLimit(limit)
			debug.SetGCPercent(GCPercent)
		}
	}
	return n
}

// memoryLimit returns the soft memory limit for avail bytes of memory, or
// 0 if avail is unknown (0).
func memoryLimit(avail uint64) int64 {
	const maxLimit = 1<<63 - 1
	l := float64(avail) * MemoryLimitFraction
	if l >= maxLimit {
		return maxLimit
	}
	return int64(l)
}

// Settings describes the runtime settings in effect, for the headers of
// benchmark reports and for logs: "GOMAXPROCS=3 GOGC=400 GOMEMLIMIT=17.9GiB".
func Settings() string {
	ss := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(ss)
	gc, lim := "off", "off"
	if ss[0].Value.Kind() == metrics.KindUint64 && ss[0].Value.Uint64() < math.MaxInt64 { // off reads as -1
		gc = strconv.FormatUint(ss[0].Value.Uint64(), 10)
	}
	if ss[1].Value.Kind() == metrics.KindUint64 && ss[1].Value.Uint64() < math.MaxInt64 {
		lim = fmt.Sprintf("%.1fGiB", float64(ss[1].Value.Uint64())/(1<<30))
	}
	return fmt.Sprintf("GOMAXPROCS=%d GOGC=%s GOMEMLIMIT=%s", runtime.GOMAXPROCS(0), gc, lim)
}
