package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

// diskProbe measures the disk while the latency phase runs, as the
// phase's baseline: every diskProbeEvery it appends 4 KiB to a file of its
// own beside the pipeline's and fdatasyncs it, as the log does for each
// group commit. On a shared virtual disk a flush now and then takes a
// hundred milliseconds or more, and the event-to-sink latency waits for
// two of them (the log's and the sink's): the probe tells such stalls of
// the disk from the pipeline's own.
type diskProbe struct {
	done chan struct{}
	lat  []time.Duration
	err  error
}

const (
	diskProbeEvery = 10 * time.Millisecond
	// diskStall is the flush time counted as a stall.
	diskStall = 20 * time.Millisecond
)

// startDiskProbe starts probing with a file in dir until ctx ends or stop
// is called.
func startDiskProbe(ctx context.Context, dir string) (*diskProbe, func() diskStats) {
	p := &diskProbe{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(p.done)
		p.err = p.run(ctx, dir)
	}()
	return p, func() diskStats {
		cancel()
		<-p.done
		return p.stats()
	}
}

func (p *diskProbe) run(ctx context.Context, dir string) error {
	f, err := os.CreateTemp(dir, "diskprobe-*")
	if err != nil {
		return fmt.Errorf("disk probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	tick := time.NewTicker(diskProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			return fmt.Errorf("disk probe: write %s: %w", f.Name(), err)
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("disk probe: fdatasync %s: %w", f.Name(), err)
		}
		p.lat = append(p.lat, time.Since(start))
	}
}

// diskStats sums up a probe: its flush times' p50, p99 and max, how many
// took diskStall or more and their total time. A write that comes during
// a stall waits for its end: stalled over the phase's length is about the
// share of events a stall delays, which the p99 of the probe's own flushes
// (one flush per stall) does not show.
type diskStats struct {
	ops           int
	p50, p99, max time.Duration
	stalls        int
	stalled       time.Duration
	err           error
}

func (p *diskProbe) stats() diskStats {
	s := diskStats{ops: len(p.lat), err: p.err}
	if len(p.lat) == 0 {
		return s
	}
	lat := slices.Clone(p.lat)
	slices.Sort(lat)
	s.p50, s.p99, s.max = quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1]
	for _, d := range lat {
		if d >= diskStall {
			s.stalls++
			s.stalled += d
		}
	}
	return s
}

// After the throughput phases have written their gigabytes, this VM's disk
// stalls now and then for a while: the latency phase right after an end to
// end saw the disk stalled 6% of the time in flushes of up to 250 ms (p99
// 229 ms), against 0.4% (p99 23 ms) when it started 30 s later. So before
// a latency phase, settleDisk waits until the disk has been quiet (no flush
// of diskStall or more) for settleQuiet, at most settleMax, probing it as
// the phase does.
const (
	settleQuiet = 5 * time.Second
	settleMax   = 60 * time.Second
)

// settleDisk waits for a quiet disk under dir (see settleQuiet) and says
// how long it waited.
func settleDisk(ctx context.Context, dir string) error {
	f, err := os.CreateTemp(dir, "settle-*")
	if err != nil {
		return fmt.Errorf("wait for the disk to settle: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	tick := time.NewTicker(diskProbeEvery)
	defer tick.Stop()
	start := time.Now()
	quietSince, stalls := start, 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return fmt.Errorf("wait for the disk to settle: write %s: %w", f.Name(), err)
		}
		if err := fdatasync(f); err != nil {
			return fmt.Errorf("wait for the disk to settle: fdatasync %s: %w", f.Name(), err)
		}
		now := time.Now()
		if now.Sub(t) >= diskStall {
			quietSince = now
			stalls++
		}
		switch {
		case now.Sub(quietSince) >= settleQuiet:
			progress("the disk settled: no flush of %v or more for %v, after %.1f s (%d stalls meanwhile)", diskStall, settleQuiet, now.Sub(start).Seconds(), stalls)
			return nil
		case now.Sub(start) >= settleMax:
			progress("the disk did not settle within %v (%d flushes of %v or more); measuring anyway", settleMax, stalls, diskStall)
			return nil
		}
	}
}
