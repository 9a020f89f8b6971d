package httptrack

import (
	"fmt"

	"github.com/tributary-io/tributary/connect"
)

var _ connect.Reporter = (*Source)(nil)

// Phases the source reports.
const (
	phaseListening = "listening"
	phaseStopping  = "stopping"
)

// backlogWarnShare is the share of max.pending.bytes waiting to be read
// beyond which Report warns that the log is not keeping up.
const backlogWarnShare = 0.5

// Report implements connect.Reporter. The worker exports the gauges on its
// own /metrics as tributary_connector_<name>{connector="…"} and shows the
// report in the task status:
//
//   - totals over all write keys: httptrack_requests (answered),
//     httptrack_requests_ok (200), httptrack_events_accepted,
//     httptrack_events_duplicate, httptrack_rejected_<reason> for each
//     rejection reason, httptrack_request_seconds_sum and _count; they only
//     grow while the task runs (they restart from 0 with the task);
//   - the backlog: httptrack_pending_requests and httptrack_pending_bytes
//     (accepted, not yet read by the worker), httptrack_unacked_requests
//     (read, not yet durable), httptrack_waiting_requests (HTTP requests
//     waiting for their answer), httptrack_dedup_ids (messageIds
//     remembered) and httptrack_journal_bytes (the dedup journal's size);
//   - httptrack_journal_dropped_bytes: what Open cut off the end of the
//     dedup journal (a torn tail, or corruption, which is also a warning);
//   - httptrack_recovered_ids: the messageIds RecoverTail found in the log
//     after the stored position at start, remembered as durable;
//   - httptrack_reads and httptrack_read_requests: the Reads that returned
//     records and the requests they returned (their ratio shows how many
//     requests share one append, and so one fsync).
//
// Warnings say when dedup cannot survive a restart (no state.dir), when
// the dedup set is full before the window ends, and when the backlog
// passes half of max.pending.bytes. The source's own /metrics has the same
// counters per write key and a latency histogram. Safe for concurrent use,
// before Open and after Close too.
func (s *Source) Report() connect.Report {
	if s.metrics == nil {
		return connect.Report{}
	}
	t := s.metrics.totals()
	g := map[string]float64{
		"httptrack_requests":              float64(t.requests),
		"httptrack_requests_ok":           float64(t.ok),
		"httptrack_events_accepted":       float64(t.accepted),
		"httptrack_events_duplicate":      float64(t.dups),
		"httptrack_request_seconds_sum":   t.latencySum,
		"httptrack_request_seconds_count": float64(t.latencyCount),
		"httptrack_waiting_requests":      float64(s.waiting.Load()),
		"httptrack_journal_bytes":         float64(s.journalBytes.Load()),
		"httptrack_journal_dropped_bytes": float64(s.recovered.dropped),
		"httptrack_recovered_ids":         float64(s.recoveredIDs.Load()),
		"httptrack_reads":                 float64(s.reads.Load()),
		"httptrack_read_requests":         float64(s.readRequests.Load()),
	}
	for i, r := range reasonsArr {
		g["httptrack_rejected_"+r] = float64(t.rejects[i])
	}

	s.mu.Lock()
	pending, pendingBytes := len(s.queue), s.queuedBytes
	unacked := s.nextSeq - 1 - s.durable - uint64(pending)
	ids := 0
	if s.dedup != nil {
		ids = s.dedup.len()
	}
	s.mu.Unlock()
	g["httptrack_pending_requests"] = float64(pending)
	g["httptrack_pending_bytes"] = float64(pendingBytes)
	g["httptrack_unacked_requests"] = float64(unacked)
	g["httptrack_dedup_ids"] = float64(ids)

	rep := connect.Report{Phase: phaseListening, Gauges: g}
	select {
	case <-s.closing:
		rep.Phase = phaseStopping
	default:
	}
	if s.set.dedupWindow > 0 && s.set.stateDir == "" {
		rep.Warnings = append(rep.Warnings, "dedup keeps messageIds in memory only: set state.dir so that a retry after a restart is not stored twice.")
	}
	if s.recovered.corrupt {
		rep.Warnings = append(rep.Warnings, "the dedup journal was corrupt at start ("+s.recovered.String()+"): check the disk under state.dir.")
	}
	if s.set.dedupWindow > 0 && ids >= s.set.dedupMax {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the dedup set is full (dedup.max.ids %d): messageIds are forgotten before dedup.window (%s) ends, so late retries may be stored twice; raise dedup.max.ids or shorten dedup.window.", s.set.dedupMax, s.set.dedupWindow))
	}
	if float64(pendingBytes) >= backlogWarnShare*float64(s.set.maxPending) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d bytes of events (%d requests) wait to be written to the log, of max.pending.bytes %d: the log is not keeping up, and beyond the limit requests are answered 503.", pendingBytes, pending, s.set.maxPending))
	}
	return rep
}
