package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	xtrace "golang.org/x/exp/trace"
)

// schedShares is how the time of an execution trace splits by what the
// Ps could have done: the share of the time with goroutines runnable but
// not running while fewer than GOMAXPROCS goroutines run, and, of that,
// while a goroutine sits in an fsync (fdatasync) syscall. A goroutine in a
// syscall keeps its P until sysmon retakes it, so a short fsync (well
// under a millisecond on a fast disk) can hold a P, with work waiting,
// for its whole length.
type schedShares struct {
	total          int64 // ns of trace
	allRunning     int64 // every P runs a goroutine
	starved        int64 // runnable goroutines wait while fewer than GOMAXPROCS run
	starvedInFsync int64 // ... while at least one goroutine is in fdatasync
	idle           int64 // nothing runnable, fewer than GOMAXPROCS run
}

// readSchedShares reads the trace at path (runtime/trace format).
func readSchedShares(path string) (schedShares, error) {
	var s schedShares
	f, err := os.Open(path)
	if err != nil {
		return s, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	r, err := xtrace.NewReader(f)
	if err != nil {
		return s, fmt.Errorf("read trace %s: %w", path, err)
	}
	procs := runtime.GOMAXPROCS(0)
	running, runnable, fsyncing := 0, 0, 0
	inFsync := map[xtrace.GoID]bool{}
	var last xtrace.Time
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, fmt.Errorf("read trace %s: %w", path, err)
		}
		if t := ev.Time(); last != 0 && t > last {
			d := int64(t - last)
			s.total += d
			switch {
			case running >= procs:
				s.allRunning += d
			case runnable > 0:
				s.starved += d
				if fsyncing > 0 {
					s.starvedInFsync += d
				}
			default:
				s.idle += d
			}
			last = t
		} else if last == 0 {
			last = t
		}
		if ev.Kind() != xtrace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != xtrace.ResourceGoroutine {
			continue
		}
		g := st.Resource.Goroutine()
		from, to := st.Goroutine()
		count := func(state xtrace.GoState, d int) {
			switch state {
			case xtrace.GoRunning:
				running += d
			case xtrace.GoRunnable:
				runnable += d
			}
		}
		count(from, -1)
		count(to, +1)
		if from == xtrace.GoSyscall && inFsync[g] {
			delete(inFsync, g)
			fsyncing--
		}
		if to == xtrace.GoSyscall {
			for fr := range ev.Stack().Frames() {
				if strings.HasSuffix(fr.Func, "Fdatasync") || strings.HasSuffix(fr.Func, "fdatasync") {
					inFsync[g] = true
					fsyncing++
					break
				}
			}
		}
	}
	return s, nil
}

// String prints the shares in percent of the trace.
func (s schedShares) String() string {
	if s.total == 0 {
		return "empty trace"
	}
	pct := func(v int64) float64 { return 100 * float64(v) / float64(s.total) }
	return fmt.Sprintf("every P running %.1f%%; goroutines runnable with a P not running one %.1f%% (%.1f%% while an fsync syscall is in progress); nothing runnable %.1f%%",
		pct(s.allRunning), pct(s.starved), pct(s.starvedInFsync), pct(s.idle))
}
