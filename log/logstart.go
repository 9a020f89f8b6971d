package log

// The log start offset and DeleteRecords, on the model of Kafka's
// UnifiedLog.maybeIncrementLogStartOffset (KIP-107).
//
// A partition's log start offset is the first offset a reader may ask for:
// reads below it fail with ErrOffsetOutOfRange, ListOffsets' earliest, an
// offset reset to earliest and a consumer from the beginning start there,
// and offset-for-time never answers below it. Retention and compaction
// raise it to the first segment's base when they delete segments;
// DeleteRecords raises it to any offset up to the high watermark, also in
// the middle of a segment (a fetch at the log start then gets the batch
// that holds it, whose records below it the Kafka clients skip, as they do
// with Kafka). It never goes down.
//
// What DeleteRecords set is written, before DeleteRecords returns, to the
// file log-start-offset-checkpoint in the partition directory (tmp, fsync,
// rename, fsync the directory): the format version and the offset, one
// decimal per line. Kafka writes its checkpoint in the background; here it
// is durable once acknowledged. Open reads it back clamped between the first
// segment's base (retention may have deleted past it) and the log end (with
// Options.FlushInterval the tail can be lost; the clamped value is written
// back, so that records appended after the open are never hidden by a stale
// checkpoint). Retention deletes the segments lying wholly below it on its
// next pass, whatever the topic's cleanup.policy, as Kafka's
// deleteLogStartOffsetBreachedSegments; the active segment always stays.
//
// Lock order: partition.startMu, partition.removeMu, partition.mu.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	logStartCheckpointFile    = "log-start-offset-checkpoint"
	logStartCheckpointVersion = 0
)

// readLogStartCheckpoint returns the log start offset saved in dir, 0 when
// there is none.
func readLogStartCheckpoint(dir string) (int64, error) {
	path := filepath.Join(dir, logStartCheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(logStartCheckpointVersion) {
		return 0, fmt.Errorf("read %s: not a version %d log start offset checkpoint", path, logStartCheckpointVersion)
	}
	off, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("read %s: bad offset %q", path, lines[1])
	}
	return off, nil
}

// writeLogStartCheckpoint records, atomically and durably, the log start
// offset of the partition in dir.
func writeLogStartCheckpoint(dir string, offset int64) error {
	data := fmt.Appendf(nil, "%d\n%d\n", logStartCheckpointVersion, offset)
	return writeFileAtomic(filepath.Join(dir, logStartCheckpointFile), data)
}

// recoverLogStart sets logStart on open from the checkpoint, clamped
// between the first segment's base and the log end (see the file comment).
// A damaged checkpoint is logged and ignored: the first segment's base is
// then the start, as before any deletion.
func (p *partition) recoverLogStart() error {
	p.logStart = p.segments[0].base
	ck, err := readLogStartCheckpoint(p.dir)
	if err != nil {
		p.logger().Error("log start offset checkpoint is damaged; the log starts at its first segment, records deleted by DeleteRecords may be readable again", "error", err)
		return nil
	}
	if ck > p.next {
		p.logger().Warn("log start offset checkpoint is past the log end (its tail was lost); the log starts at its end",
			"checkpoint", ck, "log_end_offset", p.next)
		if err := writeLogStartCheckpoint(p.dir, p.next); err != nil {
			return fmt.Errorf("clamp log start offset of %s: %w", p, err)
		}
		ck = p.next
	}
	p.logStart = max(p.logStart, ck)
	return nil
}

// deleteRecords moves the log start offset up to offset (-1: the high
// watermark) and returns the log start offset after it, the partition's
// low watermark. offset must lie between 0 and the high watermark; one at or
// below the log start changes nothing.
func (p *partition) deleteRecords(offset int64) (int64, error) {
	p.startMu.Lock()
	defer p.startMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, ErrClosed
	}
	start, hw := p.logStart, p.visible
	p.mu.Unlock()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 {
		return 0, fmt.Errorf("%w: delete records of %s: offset %d is not valid (give an offset, or -1 for the high watermark)", ErrOffsetOutOfRange, p, offset)
	}
	if offset > hw {
		return 0, fmt.Errorf("%w: delete records of %s: cannot move the log start offset to %d, past the high watermark %d", ErrOffsetOutOfRange, p, offset, hw)
	}
	if offset <= start {
		return start, nil
	}
	p.removeMu.Lock()
	if p.moved { // the topic was deleted: its directory is gone, the path may be a new topic's
		p.removeMu.Unlock()
		return 0, ErrClosed
	}
	err := writeLogStartCheckpoint(p.dir, offset)
	p.removeMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("delete records of %s below %d: %w", p, offset, err)
	}
	p.mu.Lock()
	p.logStart = max(p.logStart, offset)
	start = p.logStart
	p.mu.Unlock()
	p.logger().Info("deleted records: log start offset moved", "log_start_offset", start)
	return start, nil
}

// DeleteRecords deletes the records of a partition below offset, as Kafka's
// DeleteRecords (kafka-delete-records.sh, AdminClient.deleteRecords): it
// moves the partition's log start offset up to offset (-1 means the high
// watermark), durably before it returns, and returns the log start offset
// after it (the low watermark). Reads below it fail with
// ErrOffsetOutOfRange at once; the segments lying wholly below it go on
// retention's next pass. An offset past the high watermark, or negative
// other than -1, is ErrOffsetOutOfRange; one at or below the log start
// changes nothing. As Kafka, it refuses internal topics (ErrInternalTopic)
// and topics whose cleanup.policy lacks delete (ErrPolicyViolation).
func (l *Log) DeleteRecords(topicName string, partition int32, offset int64) (lowWatermark int64, err error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return 0, err
	}
	if IsInternalTopic(topicName) {
		return 0, fmt.Errorf("%w: cannot delete records of %s, which holds committed offsets or source positions", ErrInternalTopic, topicName)
	}
	if !p.cfg().Delete {
		return 0, fmt.Errorf("%w: records of %s cannot be deleted: its cleanup.policy has no delete", ErrPolicyViolation, p)
	}
	low, err := p.deleteRecords(offset)
	return low, l.deletedErr(topicName, p, err)
}
