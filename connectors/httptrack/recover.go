package httptrack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/tributary-io/tributary/connect"
)

var _ connect.TailRecoverer = (*Source)(nil)

// The tail of the log after the last stored position.
//
// The worker appends a request's records, then stores the position, then
// acks. A crash between the append and the store leaves the records
// durable in the log while their client got no answer (or its 200 on
// Durable was lost); it sends them again. This recovery is also what makes
// answering on Durable safe (see the package doc, Acknowledgement). On Open the dedup journal
// forgets the ids of the requests after the stored position (their records
// may not be in the log), so without more the resend would be stored twice.
// The worker therefore hands the source, before its first Read, the records
// appended to its topics after the stored position (connect.TailRecoverer):
// RecoverTail remembers their messageIds as durable, in the dedup set and
// the journal, and the resend is dropped and answered 200.
//
// A record does not say which write key sent it, and the source adds
// nothing to the records to tell (they stay Segment's messages, and hold
// nothing derived from the secret keys). RecoverTail therefore remembers a
// recovered messageId for every write key that routes to the record's
// topic: exactly the sender's key when the topic has one key (the usual
// case), and also the other keys of a shared topic, whose clients would
// have to reuse the same messageId within the window to be affected.
//
// Tracking requests wait (at most ack.timeout, then 503) until the first
// Read, so that no resend is accepted before the tail is recovered.

// TailTopics returns the topics the source writes to: "" stands for the
// topic the pipeline configures for the source (that of every write key
// without a topic of its own; records the source hands out with an empty
// Topic go there), followed by each write key's own topic, sorted. It
// implements connect.TailRecoverer; Open must have succeeded.
func (s *Source) TailTopics() []string {
	topics := []string{}
	own := false
	for _, k := range s.set.keys {
		if k.topic == "" {
			own = true
		} else if !slices.Contains(topics, k.topic) {
			topics = append(topics, k.topic)
		}
	}
	slices.Sort(topics)
	if own {
		topics = slices.Insert(topics, 0, "")
	}
	return topics
}

// RecoverTail remembers the messageIds of records the source wrote to the
// log after the last stored position (see above) as durable, for the
// write keys routing to each record's topic, in the dedup set and in the
// dedup journal (written by the next Read). Records that are not the
// source's messages (other writers may share a topic) and messages older
// than dedup.window are skipped. It is called after Open and before the
// first Read; with dedup off it does nothing.
func (s *Source) RecoverTail(ctx context.Context, recs []connect.Record) error {
	if s.dedup == nil || len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	byTopic, defaults := s.keysByTopic()
	var (
		a       arena
		skipped int
		found   int
		hashes  []msgHash
		entries []byte
		entryAt int64
	)
	s.mu.Lock()
	seq := s.acked // the stored position at Open: the journal keeps these entries
	flush := func() {
		if len(hashes) > 0 && s.journal != nil {
			entries = appendJournalEntry(entries, seq, entryAt, hashes)
		}
		hashes = hashes[:0]
	}
	for _, rec := range recs {
		id, at, ok := recoveredMessage(&a, rec.Value)
		if !ok {
			skipped++
			continue
		}
		if at == 0 || at > now {
			at = now
		}
		if now-at >= s.dedup.window {
			continue
		}
		keys, ok := byTopic[rec.Topic]
		if !ok {
			keys = defaults
		}
		if at != entryAt {
			flush()
			entryAt = at
		}
		for _, k := range keys {
			h := hashID(k, id)
			if old, dup := s.dedup.lookup(h, now); dup && old.seq <= seq && old.at >= at {
				continue
			}
			s.dedup.add(h, seen{seq: seq, at: at})
			hashes = append(hashes, h)
		}
		found++
	}
	flush()
	s.jbuf = append(s.jbuf, entries...)
	s.mu.Unlock()
	s.recoveredIDs.Add(int64(found))
	s.recoveredSkipped.Add(int64(skipped))
	return nil
}

// keysByTopic returns the write keys of each topic of their own, and the
// keys that use the source's configured topic.
func (s *Source) keysByTopic() (map[string][]string, []string) {
	byTopic := map[string][]string{}
	var defaults []string
	for _, k := range s.set.keys {
		if k.topic == "" {
			defaults = append(defaults, k.key)
		} else {
			byTopic[k.topic] = append(byTopic[k.topic], k.key)
		}
	}
	return byTopic, defaults
}

// recoveredMessage returns the messageId of a record value the source
// wrote and when it was received (unix ms, 0 when unknown).
func recoveredMessage(a *arena, value []byte) (string, int64, bool) {
	if len(value) == 0 || value[0] != '{' || !validJSON(value) {
		return "", 0, false
	}
	a.members = a.members[:0]
	o, err := scanMembers(a, value)
	if err != nil {
		return "", 0, false
	}
	raw, ok := o.get("messageId")
	if !ok {
		return "", 0, false
	}
	id, ok := jsonString(raw)
	if !ok || id == "" {
		return "", 0, false
	}
	var at int64
	if raw, ok := o.get("receivedAt"); ok {
		if t, err := parseTime(raw); err == nil {
			at = t.UnixMilli()
		}
	}
	return id, at, true
}

// awaitReady waits until the first Read, which comes after the worker
// recovered the log tail, or answers 503 after ack.timeout and when the
// source is stopping.
func (s *Source) awaitReady() (int, *problem) {
	t := time.NewTimer(s.set.ackTimeout)
	defer t.Stop()
	select {
	case <-s.ready:
		return http.StatusOK, nil
	case <-t.C:
		return http.StatusServiceUnavailable, &problem{Index: -1, Code: "starting", Message: fmt.Sprintf("the source is starting and not yet reading (within %s): retry later", s.set.ackTimeout)}
	case <-s.closing:
		return http.StatusServiceUnavailable, &problem{Index: -1, Code: "stopping", Message: "the source is stopping: retry later"}
	}
}
