package log

// Offset resets, as kafka-consumer-groups.sh --reset-offsets does them: a plan
// is computed first (the dry run) and applied only on request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ResetMode says where a reset moves a group's offsets.
type ResetMode int

// Reset modes, one per kafka-consumer-groups.sh option.
const (
	ResetToEarliest ResetMode = iota + 1 // --to-earliest: the log start offset
	ResetToLatest                        // --to-latest: the log end offset
	ResetToOffset                        // --to-offset N
	ResetToDatetime                      // --to-datetime: first record at or after Time
	ResetByDuration                      // --by-duration: first record at or after now - Duration
	ResetShiftBy                         // --shift-by ±N: the committed offset moved by Shift
	ResetToCurrent                       // --to-current: the committed offset (log end when none)
)

// String returns the mode as the Kafka tool's option names it.
func (m ResetMode) String() string {
	switch m {
	case ResetToEarliest:
		return "to-earliest"
	case ResetToLatest:
		return "to-latest"
	case ResetToOffset:
		return "to-offset"
	case ResetToDatetime:
		return "to-datetime"
	case ResetByDuration:
		return "by-duration"
	case ResetShiftBy:
		return "shift-by"
	case ResetToCurrent:
		return "to-current"
	}
	return fmt.Sprintf("ResetMode(%d)", int(m))
}

// resetModes are the modes, in the order the Kafka tool lists them.
var resetModes = []ResetMode{ResetToEarliest, ResetToLatest, ResetToOffset, ResetToDatetime, ResetByDuration, ResetShiftBy, ResetToCurrent}

// resetModesHelp lists the modes by name with the ResetSpec field each uses.
const resetModesHelp = "to-earliest, to-latest, to-offset (with Offset), to-datetime (with Time), by-duration (with Duration), shift-by (with Shift) or to-current"

// ParseResetMode returns the mode of a name as String returns it
// ("to-earliest", the Kafka tool's option without its dashes).
func ParseResetMode(name string) (ResetMode, error) {
	for _, m := range resetModes {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown mode %q; give one of %s", ErrInvalidReset, name, resetModesHelp)
}

// UnmarshalJSON reads a mode by name ("to-earliest", see ParseResetMode) or
// by number (the constants' values, as a ResetMode marshals).
func (m *ResetMode) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		mode, err := ParseResetMode(name)
		if err != nil {
			return err
		}
		*m = mode
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%w: mode %s: want a name, one of %s", ErrInvalidReset, b, resetModesHelp)
	}
	*m = ResetMode(n)
	return nil
}

// TopicScope selects partitions of one topic: all of them when Partitions is
// empty.
type TopicScope struct {
	Topic      string
	Partitions []int32
}

// ResetSpec says which partitions a reset covers and where it moves them.
// Exactly one of AllTopics and Topics is set. Offset is used by
// ResetToOffset, Time by ResetToDatetime, Duration by ResetByDuration and
// Shift by ResetShiftBy.
type ResetSpec struct {
	Mode      ResetMode
	Offset    int64
	Time      time.Time
	Duration  time.Duration
	Shift     int64
	AllTopics bool // every partition the group has committed offsets for
	Topics    []TopicScope
}

// ResetPlan is one row of a reset: a partition's committed offset now and
// after the reset.
type ResetPlan struct {
	Group, Topic string
	Partition    int32
	// CurrentOffset is the committed offset, -1 when none is committed.
	CurrentOffset int64
	NewOffset     int64
	// Warning explains an adjustment, e.g. an offset clamped to the log
	// start or end; empty when there is none.
	Warning string
}

// PlanReset computes a reset without changing anything (the dry run), one
// row per partition sorted by topic and partition.
//
// With AllTopics the reset covers every partition the group has committed
// offsets for (as the Kafka tool does); the group must exist. Explicit topics
// must exist but may be new to the group. Offsets are clamped to [log start,
// log end] with a warning, as kafka-consumer-groups.sh does; ResetToCurrent
// keeps an out-of-range committed offset and only warns. ResetToDatetime and
// ResetByDuration pick the first offset whose timestamp is at or after the
// time, the log end when no record is that new. ResetShiftBy needs a
// committed offset on every partition it covers.
func (g *Groups) PlanReset(group string, spec ResetSpec) ([]ResetPlan, error) {
	if err := validateGroupName(group); err != nil {
		return nil, fmt.Errorf("plan offset reset: %w", err)
	}
	if err := spec.validate(); err != nil {
		return nil, fmt.Errorf("plan offset reset of group %s: %w", group, err)
	}
	committed := map[TopicPartition]int64{}
	for _, c := range g.Committed(group) {
		committed[TopicPartition{c.Topic, c.Partition}] = c.Offset
	}
	tps, err := g.resetScope(group, spec, committed)
	if err != nil {
		return nil, fmt.Errorf("plan offset reset of group %s: %w", group, err)
	}
	var at time.Time
	switch spec.Mode {
	case ResetToDatetime:
		at = spec.Time
	case ResetByDuration:
		at = g.l.now().Add(-spec.Duration)
	}
	plan := make([]ResetPlan, 0, len(tps))
	for _, tp := range tps {
		cur, has := committed[tp]
		if !has {
			cur = -1
		}
		row := ResetPlan{Group: group, Topic: tp.Topic, Partition: tp.Partition, CurrentOffset: cur}
		start, end, err := g.l.Offsets(tp.Topic, tp.Partition)
		if errors.Is(err, ErrUnknownTopic) || errors.Is(err, ErrUnknownPartition) {
			// Only AllTopics gets here: the group has commits for a
			// partition that does not exist (any more).
			row.NewOffset = cur
			row.Warning = fmt.Sprintf("%s-%d does not exist; offset left at %d", tp.Topic, tp.Partition, cur)
			plan = append(plan, row)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("plan offset reset of group %s: %w", group, err)
		}
		var target int64
		switch spec.Mode {
		case ResetToEarliest:
			target = start
		case ResetToLatest:
			target = end
		case ResetToOffset:
			target = spec.Offset
		case ResetToDatetime, ResetByDuration:
			off, _, err := g.l.OffsetForTime(tp.Topic, tp.Partition, at)
			if err != nil {
				return nil, fmt.Errorf("plan offset reset of group %s: find offset of %s-%d at %s: %w", group, tp.Topic, tp.Partition, at.UTC().Format(time.RFC3339Nano), err)
			}
			target = off
		case ResetShiftBy:
			if !has {
				return nil, fmt.Errorf("plan offset reset of group %s: cannot shift %s-%d: the group has no committed offset there (reset it with to-earliest, to-latest or to-offset first)", group, tp.Topic, tp.Partition)
			}
			target = addClamped(cur, spec.Shift)
		case ResetToCurrent:
			if !has {
				row.NewOffset = end
				row.Warning = fmt.Sprintf("no committed offset; set to the log end offset %d", end)
				plan = append(plan, row)
				continue
			}
			row.NewOffset = cur
			if cur < start || cur > end {
				row.Warning = fmt.Sprintf("committed offset %d is outside [%d, %d] of %s-%d; kept", cur, start, end, tp.Topic, tp.Partition)
			}
			plan = append(plan, row)
			continue
		}
		row.NewOffset, row.Warning = clampOffset(tp, target, start, end)
		plan = append(plan, row)
	}
	return plan, nil
}

func (s ResetSpec) validate() error {
	switch s.Mode {
	case ResetToEarliest, ResetToLatest, ResetToOffset, ResetShiftBy, ResetToCurrent:
	case ResetToDatetime:
		if s.Time.IsZero() {
			return fmt.Errorf("%w: to-datetime needs a time, e.g. 2026-01-01T00:00:00.000", ErrInvalidReset)
		}
	case ResetByDuration:
		if s.Duration < 0 {
			return fmt.Errorf("%w: by-duration %s is negative; give how far back from now, e.g. P1DT2H", ErrInvalidReset, s.Duration)
		}
	case 0:
		return fmt.Errorf("%w: no mode; give one of %s", ErrInvalidReset, resetModesHelp)
	default:
		return fmt.Errorf("%w: unknown mode %d; give one of %s", ErrInvalidReset, int(s.Mode), resetModesHelp)
	}
	switch {
	case s.AllTopics && len(s.Topics) > 0:
		return fmt.Errorf("%w: give either all topics or a list of topics, not both", ErrInvalidReset)
	case !s.AllTopics && len(s.Topics) == 0:
		return fmt.Errorf("%w: no topics: give all topics or a list of topics", ErrInvalidReset)
	}
	return nil
}

// resetScope resolves the partitions a reset covers, sorted and without
// duplicates.
func (g *Groups) resetScope(group string, spec ResetSpec, committed map[TopicPartition]int64) ([]TopicPartition, error) {
	set := map[TopicPartition]bool{}
	if spec.AllTopics {
		if len(committed) == 0 {
			return nil, fmt.Errorf("%w: no committed offsets to reset for all topics (name the topics instead)", ErrUnknownGroup)
		}
		for tp := range committed {
			set[tp] = true
		}
	}
	for _, sc := range spec.Topics {
		n, err := g.l.Partitions(sc.Topic)
		if err != nil {
			return nil, err
		}
		if len(sc.Partitions) == 0 {
			for p := int32(0); p < int32(n); p++ {
				set[TopicPartition{sc.Topic, p}] = true
			}
			continue
		}
		for _, p := range sc.Partitions {
			if err := CheckPartition(sc.Topic, p, n); err != nil {
				return nil, err
			}
			set[TopicPartition{sc.Topic, p}] = true
		}
	}
	out := make([]TopicPartition, 0, len(set))
	for tp := range set {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return tpLess(out[i], out[j]) })
	return out, nil
}

// CheckPartition returns an error wrapping ErrUnknownPartition when topic,
// which has n partitions, has no partition p. Whoever moves a group's
// offsets checks with it, as Kafka refuses offsets of unknown partitions
// (UNKNOWN_TOPIC_OR_PARTITION).
func CheckPartition(topic string, p int32, n int) error {
	if p < 0 || int(p) >= n {
		return fmt.Errorf("%w: %s has no partition %d (it has %d)", ErrUnknownPartition, topic, p, n)
	}
	return nil
}

// OffsetRangeError is an offset outside what a partition holds: below its
// log start offset (those records are gone) or past its log end offset
// (the offset the next record gets, which a committed offset may equal).
// It wraps ErrOffsetOutOfRange.
type OffsetRangeError struct {
	TopicPartition
	Offset, Start, End int64
}

func (e *OffsetRangeError) Error() string {
	where := fmt.Sprintf("past the log end offset %d", e.End)
	if e.Below() {
		where = fmt.Sprintf("below the log start offset %d", e.Start)
	}
	return fmt.Sprintf("offset %d is %s of %s-%d (valid offsets: [%d, %d], from the log start to the log end offset)",
		e.Offset, where, e.Topic, e.Partition, e.Start, e.End)
}

// Below reports whether the offset is below the log start offset rather
// than past the end.
func (e *OffsetRangeError) Below() bool { return e.Offset < e.Start }

func (e *OffsetRangeError) Unwrap() error { return ErrOffsetOutOfRange }

// CheckOffset returns an *OffsetRangeError when off lies outside [start,
// end], a partition's log start and log end offsets: the range PlanReset
// clamps new offsets to.
func CheckOffset(tp TopicPartition, off, start, end int64) error {
	if off < start || off > end {
		return &OffsetRangeError{TopicPartition: tp, Offset: off, Start: start, End: end}
	}
	return nil
}

// clampOffset keeps off within [start, end], saying so when it moves it.
func clampOffset(tp TopicPartition, off, start, end int64) (int64, string) {
	var re *OffsetRangeError
	if !errors.As(CheckOffset(tp, off, start, end), &re) {
		return off, ""
	}
	to := end
	if re.Below() {
		to = start
	}
	return to, fmt.Sprintf("new %v; set to %d", re, to)
}

// addClamped adds without overflowing.
func addClamped(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// ApplyReset commits the new offsets of a plan from PlanReset, in one durable
// append. It refuses with ErrGroupNotEmpty while the group has active
// members, as Kafka does: stop the consumers first. Every row must belong to
// group.
func (g *Groups) ApplyReset(ctx context.Context, group string, plan []ResetPlan) error {
	if err := validateGroupName(group); err != nil {
		return fmt.Errorf("apply offset reset: %w", err)
	}
	if len(plan) == 0 {
		return nil
	}
	offsets := make([]OffsetCommit, len(plan))
	for i, r := range plan {
		if r.Group != group {
			return fmt.Errorf("apply offset reset of group %s: row %d is for group %q", group, i, r.Group)
		}
		offsets[i] = OffsetCommit{Topic: r.Topic, Partition: r.Partition, Offset: r.NewOffset}
	}
	g.mu.Lock()
	var err error
	if gr, ok := g.groups[group]; ok {
		err = gr.checkNoMembers("reset offsets of")
	}
	g.mu.Unlock()
	if err != nil {
		return err
	}
	// Commit refuses too if a member joined since: a simple commit is only
	// accepted by a group without members.
	if err := g.Commit(ctx, group, offsets); err != nil {
		return fmt.Errorf("apply offset reset: %w", err)
	}
	return nil
}

// ParseTopicScope parses a reset scope as kafka-consumer-groups.sh --topic
// takes it: "orders" (every partition) or "orders:0,1".
func ParseTopicScope(s string) (TopicScope, error) {
	const want = "want TOPIC or TOPIC:PARTITION[,PARTITION...], e.g. orders or orders:0,1"
	name, parts, hasParts := strings.Cut(s, ":")
	if err := ValidateTopicName(name); err != nil {
		return TopicScope{}, fmt.Errorf("invalid topic scope %q: %w; %s", s, err, want)
	}
	sc := TopicScope{Topic: name}
	if !hasParts {
		return sc, nil
	}
	if parts == "" {
		return TopicScope{}, fmt.Errorf("invalid topic scope %q: no partitions after ':'; %s", s, want)
	}
	seen := map[int32]bool{}
	for _, f := range strings.Split(parts, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return TopicScope{}, fmt.Errorf("invalid topic scope %q: partition %q is not a number from 0 up; %s", s, f, want)
		}
		if !seen[int32(n)] {
			seen[int32(n)] = true
			sc.Partitions = append(sc.Partitions, int32(n))
		}
	}
	return sc, nil
}

// isoDurationRE matches java.time.Duration's ISO-8601 form restricted to
// what kafka-consumer-groups.sh --by-duration means: PnDTnHnMn.nS, every
// part optional but at least one present, no signs.
var isoDurationRE = regexp.MustCompile(`(?i)^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d{1,9}))?S)?)?$`)

// ParseResetDuration parses an ISO-8601 duration as --by-duration takes it:
// PnDTnHnMnS, e.g. P1DT2H, PT30M or PT1.5S. The duration reaches back from
// now, so it cannot be negative. Years, months and weeks are refused (they
// have no fixed length; use days).
func ParseResetDuration(s string) (time.Duration, error) {
	const want = "want an ISO-8601 duration PnDTnHnMnS, e.g. P1DT2H (1 day 2 hours) or PT30M"
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("invalid duration %q: negative; it reaches back from now, so give it without a sign: %s", s, want)
	}
	t = strings.TrimPrefix(t, "+")
	m := isoDurationRE.FindStringSubmatch(t)
	if m == nil || t == "" || strings.EqualFold(t, "P") || strings.HasSuffix(strings.ToUpper(t), "T") {
		hint := ""
		if u := strings.ToUpper(t); strings.HasPrefix(u, "P") && strings.ContainsAny(strings.SplitN(u, "T", 2)[0], "YMW") {
			hint = " (years, months and weeks have no fixed length; use days, e.g. P30D)"
		}
		return 0, fmt.Errorf("invalid duration %q%s: %s", s, hint, want)
	}
	units := []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}
	var total time.Duration
	for i, u := range units {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64(math.MaxInt64/u) || total > math.MaxInt64-time.Duration(n)*u {
			return 0, fmt.Errorf("invalid duration %q: too long; %s", s, want)
		}
		total += time.Duration(n) * u
	}
	if frac := m[5]; frac != "" {
		ns, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if total > math.MaxInt64-time.Duration(ns) {
			return 0, fmt.Errorf("invalid duration %q: too long; %s", s, want)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// resetDatetimeLayouts are the forms --to-datetime accepts. Go accepts a
// fractional second after the seconds field of any of them.
var resetDatetimeLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05Z07",
}

// ParseResetDatetime parses a time as --to-datetime takes it:
// YYYY-MM-DDTHH:mm:SS[.sss] with an optional zone (Z, +02:00, +0200); UTC
// when no zone is given, e.g. 2026-01-01T00:00:00.000.
func ParseResetDatetime(s string) (time.Time, error) {
	const want = "want YYYY-MM-DDTHH:mm:SS.sss with an optional zone, e.g. 2026-01-01T00:00:00.000 (UTC) or 2026-01-01T00:00:00.000+02:00"
	t := strings.TrimSpace(s)
	date, clock, ok := strings.Cut(t, "T")
	if !ok || len(date) != len("2006-01-02") {
		return time.Time{}, fmt.Errorf("invalid datetime %q: %s", s, want)
	}
	if !strings.ContainsAny(clock, "Zz+-") {
		if v, err := time.ParseInLocation("2006-01-02T15:04:05", t, time.UTC); err == nil {
			return v, nil
		}
		return time.Time{}, fmt.Errorf("invalid datetime %q: %s", s, want)
	}
	if strings.HasSuffix(t, "z") {
		t = t[:len(t)-1] + "Z"
	}
	for _, layout := range resetDatetimeLayouts {
		if v, err := time.Parse(layout, t); err == nil {
			return v, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid datetime %q: %s", s, want)
}
