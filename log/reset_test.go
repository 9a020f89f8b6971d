package log

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// resetFixture is a log with topic t of two partitions, ten records each,
// record i stamped groupsClock - 10m + i minutes, and group g committed at 5
// on both partitions.
func resetFixture(t *testing.T) *Log {
	t.Helper()
	l := openGroupsLog(t, t.TempDir())
	t.Cleanup(func() { l.Close() })
	if err := l.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 10; i++ {
			ts := groupsClock.Add(time.Duration(i-10) * time.Minute)
			if _, err := l.Append(t.Context(), "t", p, []Record{{Value: []byte(fmt.Sprint(i)), Timestamp: ts}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 5}, OffsetCommit{Topic: "t", Partition: 1, Offset: 5})
	return l
}

// planOffsets renders a plan as "t-0 5->0" rows, with "!" on rows that warn.
func planOffsets(plan []ResetPlan) []string {
	var out []string
	for _, r := range plan {
		s := fmt.Sprintf("%s-%d %d->%d", r.Topic, r.Partition, r.CurrentOffset, r.NewOffset)
		if r.Warning != "" {
			s += "!"
		}
		out = append(out, s)
	}
	return out
}

func TestReset_Modes(t *testing.T) {
	l := resetFixture(t)
	g := l.Groups()
	all := []TopicScope{{Topic: "t"}}
	p0 := []TopicScope{{Topic: "t", Partitions: []int32{0}}}
	cases := []struct {
		name string
		spec ResetSpec
		want []string
	}{
		{"earliest", ResetSpec{Mode: ResetToEarliest, Topics: all}, []string{"t-0 5->0", "t-1 5->0"}},
		{"latest", ResetSpec{Mode: ResetToLatest, AllTopics: true}, []string{"t-0 5->10", "t-1 5->10"}},
		{"to-offset", ResetSpec{Mode: ResetToOffset, Offset: 3, Topics: p0}, []string{"t-0 5->3"}},
		{"to-offset past end clamps", ResetSpec{Mode: ResetToOffset, Offset: 100, Topics: p0}, []string{"t-0 5->10!"}},
		{"to-offset below start clamps", ResetSpec{Mode: ResetToOffset, Offset: -5, Topics: p0}, []string{"t-0 5->0!"}},
		{"shift back", ResetSpec{Mode: ResetShiftBy, Shift: -2, Topics: all}, []string{"t-0 5->3", "t-1 5->3"}},
		{"shift forward clamps", ResetSpec{Mode: ResetShiftBy, Shift: 100, Topics: p0}, []string{"t-0 5->10!"}},
		{"shift back clamps", ResetSpec{Mode: ResetShiftBy, Shift: -100, Topics: p0}, []string{"t-0 5->0!"}},
		{"to-datetime exact", ResetSpec{Mode: ResetToDatetime, Time: groupsClock.Add(-6 * time.Minute), Topics: p0}, []string{"t-0 5->4"}},
		{"to-datetime between", ResetSpec{Mode: ResetToDatetime, Time: groupsClock.Add(-6*time.Minute - time.Second), Topics: p0}, []string{"t-0 5->4"}},
		{"to-datetime before all", ResetSpec{Mode: ResetToDatetime, Time: groupsClock.Add(-time.Hour), Topics: p0}, []string{"t-0 5->0"}},
		{"to-datetime after all", ResetSpec{Mode: ResetToDatetime, Time: groupsClock.Add(time.Hour), Topics: p0}, []string{"t-0 5->10"}},
		{"by-duration", ResetSpec{Mode: ResetByDuration, Duration: 3 * time.Minute, Topics: all}, []string{"t-0 5->7", "t-1 5->7"}},
		{"by-duration zero", ResetSpec{Mode: ResetByDuration, Topics: p0}, []string{"t-0 5->10"}},
		{"to-current", ResetSpec{Mode: ResetToCurrent, AllTopics: true}, []string{"t-0 5->5", "t-1 5->5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := g.PlanReset("g", c.spec)
			if err != nil {
				t.Fatalf("PlanReset: %v", err)
			}
			if got := planOffsets(plan); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("plan %v, want %v (%+v)", got, c.want, plan)
			}
			for _, r := range plan {
				if r.Group != "g" {
					t.Fatalf("row for group %q", r.Group)
				}
			}
		})
	}
}

func TestReset_ClampWarningsAndLogStart(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	// Tiny segments and retention.bytes move the log start past 0.
	if err := l.CreateTopic("t", 1, map[string]string{ConfigSegmentBytes: "100", ConfigRetentionBytes: "300"}); err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "t", 0, 20)
	l.EnforceRetention()
	start, end, err := l.Offsets("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if start == 0 || end != 20 {
		t.Fatalf("log start %d, end %d; want start > 0 and end 20", start, end)
	}
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 1})
	g := l.Groups()

	plan, err := g.PlanReset("g", ResetSpec{Mode: ResetShiftBy, Shift: 1, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].NewOffset != start || !strings.Contains(plan[0].Warning, "below the log start") {
		t.Fatalf("shift below the log start: %+v, want new offset %d with a warning", plan, start)
	}
	plan, err = g.PlanReset("g", ResetSpec{Mode: ResetToEarliest, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan[0].NewOffset != start || plan[0].Warning != "" {
		t.Fatalf("to-earliest: %+v, want %d without warning", plan[0], start)
	}
	plan, err = g.PlanReset("g", ResetSpec{Mode: ResetToOffset, Offset: 25, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan[0].NewOffset != 20 || !strings.Contains(plan[0].Warning, "past the log end") {
		t.Fatalf("to-offset past end: %+v", plan[0])
	}
	// to-current keeps an out-of-range committed offset, with a warning.
	plan, err = g.PlanReset("g", ResetSpec{Mode: ResetToCurrent, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan[0].NewOffset != 1 || plan[0].Warning == "" {
		t.Fatalf("to-current out of range: %+v", plan[0])
	}
}

func TestReset_DryRunChangesNothing_ApplyPersists(t *testing.T) {
	l := resetFixture(t)
	g := l.Groups()
	before := g.Committed("g")
	_, offsetsEnd, err := l.Offsets(OffsetsTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := g.PlanReset("g", ResetSpec{Mode: ResetToEarliest, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Committed("g"); !reflect.DeepEqual(got, before) {
		t.Fatalf("PlanReset changed the offsets: %+v, was %+v", got, before)
	}
	if _, end, _ := l.Offsets(OffsetsTopic, 0); end != offsetsEnd {
		t.Fatalf("PlanReset appended to %s (end %d, was %d)", OffsetsTopic, end, offsetsEnd)
	}

	if err := g.ApplyReset(t.Context(), "g", plan); err != nil {
		t.Fatalf("ApplyReset: %v", err)
	}
	for p := int32(0); p < 2; p++ {
		if off, _ := g.CommittedOffset("g", "t", p); off != 0 {
			t.Fatalf("t-%d = %d after reset to earliest, want 0", p, off)
		}
	}
	rows, err := g.Describe("g")
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Lag != 10 || rows[1].Lag != 10 {
		t.Fatalf("lag after reset to earliest: %+v", rows)
	}

	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openGroupsLog(t, dir)
	defer l2.Close()
	if off, ok := l2.Groups().CommittedOffset("g", "t", 1); !ok || off != 0 {
		t.Fatalf("reset offset after restart = %d, %v; want 0", off, ok)
	}

	if err := l2.Groups().ApplyReset(t.Context(), "g", []ResetPlan{{Group: "other", Topic: "t", NewOffset: 1}}); err == nil {
		t.Fatal("ApplyReset accepted a row of another group")
	}
}

func TestReset_Scope(t *testing.T) {
	l := resetFixture(t)
	g := l.Groups()

	// Explicit topics may be new to the group.
	if err := l.CreateTopic("fresh", 3, nil); err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "fresh", 1, 4)
	plan, err := g.PlanReset("g", ResetSpec{Mode: ResetToLatest, Topics: []TopicScope{{Topic: "fresh", Partitions: []int32{1, 2}}, {Topic: "fresh", Partitions: []int32{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planOffsets(plan), []string{"fresh-1 -1->4", "fresh-2 -1->0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	// A new group too.
	plan, err = g.PlanReset("newbie", ResetSpec{Mode: ResetToCurrent, Topics: []TopicScope{{Topic: "t", Partitions: []int32{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planOffsets(plan), []string{"t-1 -1->10!"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("to-current without a commit: %v, want %v", got, want)
	}
	if err := g.ApplyReset(t.Context(), "newbie", plan); err != nil {
		t.Fatal(err)
	}
	if off, _ := g.CommittedOffset("newbie", "t", 1); off != 10 {
		t.Fatalf("newbie t-1 = %d, want 10", off)
	}

	errCases := []struct {
		name  string
		group string
		spec  ResetSpec
		is    error
		text  string
	}{
		{"all topics of an unknown group", "nope", ResetSpec{Mode: ResetToEarliest, AllTopics: true}, ErrUnknownGroup, ""},
		{"unknown topic", "g", ResetSpec{Mode: ResetToEarliest, Topics: []TopicScope{{Topic: "ghost"}}}, ErrUnknownTopic, ""},
		{"unknown partition", "g", ResetSpec{Mode: ResetToEarliest, Topics: []TopicScope{{Topic: "t", Partitions: []int32{7}}}}, ErrUnknownPartition, ""},
		{"both scopes", "g", ResetSpec{Mode: ResetToEarliest, AllTopics: true, Topics: []TopicScope{{Topic: "t"}}}, nil, "not both"},
		{"no scope", "g", ResetSpec{Mode: ResetToEarliest}, nil, "no topics"},
		{"no mode", "g", ResetSpec{AllTopics: true}, ErrInvalidReset, "no mode; give one of to-earliest, to-latest"},
		{"datetime without time", "g", ResetSpec{Mode: ResetToDatetime, AllTopics: true}, nil, "2026-01-01T00:00:00.000"},
		{"negative duration", "g", ResetSpec{Mode: ResetByDuration, Duration: -time.Hour, AllTopics: true}, nil, "P1DT2H"},
		{"shift without commit", "g", ResetSpec{Mode: ResetShiftBy, Shift: 1, Topics: []TopicScope{{Topic: "fresh"}}}, nil, "no committed offset"},
		{"empty group", "", ResetSpec{Mode: ResetToEarliest, AllTopics: true}, nil, "invalid group id"},
	}
	for _, c := range errCases {
		_, err := g.PlanReset(c.group, c.spec)
		switch {
		case err == nil:
			t.Errorf("%s: PlanReset succeeded", c.name)
		case c.is != nil && !errors.Is(err, c.is):
			t.Errorf("%s: error %v, want %v", c.name, err, c.is)
		case c.text != "" && !strings.Contains(err.Error(), c.text):
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.text)
		}
	}
}

func TestReset_AllTopicsWithCommitsOfMissingTopic(t *testing.T) {
	l := resetFixture(t)
	g := l.Groups()
	mustCommit(t, l, "g", OffsetCommit{Topic: "ghost", Partition: 0, Offset: 3})
	plan, err := g.PlanReset("g", ResetSpec{Mode: ResetToEarliest, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planOffsets(plan), []string{"ghost-0 3->3!", "t-0 5->0", "t-1 5->0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
}

func TestParseTopicScope(t *testing.T) {
	good := []struct {
		in   string
		want TopicScope
	}{
		{"orders", TopicScope{Topic: "orders"}},
		{"orders:0", TopicScope{Topic: "orders", Partitions: []int32{0}}},
		{"web.tracking:0,1, 3", TopicScope{Topic: "web.tracking", Partitions: []int32{0, 1, 3}}},
		{"t:2,2", TopicScope{Topic: "t", Partitions: []int32{2}}},
	}
	for _, c := range good {
		got, err := ParseTopicScope(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseTopicScope(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", ":0", "t:", "t:a", "t:-1", "t:0,,1", "a b", "t:99999999999"} {
		_, err := ParseTopicScope(in)
		if err == nil {
			t.Errorf("ParseTopicScope(%q) succeeded", in)
			continue
		}
		if !strings.Contains(err.Error(), "e.g. orders or orders:0,1") {
			t.Errorf("ParseTopicScope(%q) error %q shows no example", in, err)
		}
	}
}

func TestParseResetDuration(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"P1DT2H", 26 * time.Hour},
		{"PT30M", 30 * time.Minute},
		{"P2D", 48 * time.Hour},
		{"PT1H30M15S", time.Hour + 30*time.Minute + 15*time.Second},
		{"PT1.5S", 1500 * time.Millisecond},
		{"pt10m", 10 * time.Minute},
		{"PT0S", 0},
		{"P1DT0.001S", 24*time.Hour + time.Millisecond},
	}
	for _, c := range good {
		got, err := ParseResetDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseResetDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, mention string }{
		{"", "P1DT2H"},
		{"P", "P1DT2H"},
		{"PT", "P1DT2H"},
		{"P1DT", "P1DT2H"},
		{"1h", "P1DT2H"},
		{"-P1D", "negative"},
		{"P1M", "use days"},
		{"P1Y", "use days"},
		{"P2W", "use days"},
		{"PT-5M", "P1DT2H"},
		{"P1H", "P1DT2H"},
		{"P999999999999D", "too long"},
	}
	for _, c := range bad {
		_, err := ParseResetDuration(c.in)
		if err == nil {
			t.Errorf("ParseResetDuration(%q) succeeded", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) || !strings.Contains(err.Error(), "e.g. P1DT2H") {
			t.Errorf("ParseResetDuration(%q) error %q: want it to mention %q and show an example", c.in, err, c.mention)
		}
	}
}

func TestParseResetDatetime(t *testing.T) {
	good := []struct {
		in   string
		want time.Time
	}{
		{"2026-01-01T00:00:00.000", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-01-01T10:20:30", time.Date(2026, 1, 1, 10, 20, 30, 0, time.UTC)},
		{"2026-01-01T10:20:30.250", time.Date(2026, 1, 1, 10, 20, 30, 250_000_000, time.UTC)},
		{"2026-01-01T00:00:00.000Z", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-01-01T02:00:00.000+02:00", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-01-01T02:00:00+0200", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2025-12-31T19:00:00.000-05:00", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range good {
		got, err := ParseResetDatetime(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseResetDatetime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "2026-01-01", "2026-01-01 00:00:00", "2026-13-01T00:00:00", "2026-01-01T25:00:00", "yesterday", "2026-01-01T00:00", "2026-01-01T00:00:00+25:00", "1767225600000"} {
		_, err := ParseResetDatetime(in)
		if err == nil {
			t.Errorf("ParseResetDatetime(%q) succeeded", in)
			continue
		}
		if !strings.Contains(err.Error(), "e.g. 2026-01-01T00:00:00.000") {
			t.Errorf("ParseResetDatetime(%q) error %q shows no example", in, err)
		}
	}
}

func TestCheckOffset_Range(t *testing.T) {
	tp := TopicPartition{Topic: "t", Partition: 1}
	for _, tt := range []struct {
		off       int64
		wantErr   bool
		wantBelow bool
	}{
		{10, false, false}, {15, false, false}, {20, false, false},
		{9, true, true}, {-1, true, true}, {21, true, false},
	} {
		err := CheckOffset(tp, tt.off, 10, 20)
		var re *OffsetRangeError
		if got := errors.As(err, &re); got != tt.wantErr {
			t.Errorf("CheckOffset(%d) = %v, want an error: %v", tt.off, err, tt.wantErr)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrOffsetOutOfRange) || re.Below() != tt.wantBelow || !strings.Contains(err.Error(), "[10, 20]") {
			t.Errorf("CheckOffset(%d) = %v (below %v), want ErrOffsetOutOfRange, below %v, naming [10, 20]", tt.off, err, re.Below(), tt.wantBelow)
		}
	}
	if err := CheckPartition("t", 2, 2); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("CheckPartition(t, 2 of 2) = %v, want ErrUnknownPartition", err)
	}
	if err := CheckPartition("t", -1, 2); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("CheckPartition(t, -1) = %v, want ErrUnknownPartition", err)
	}
	if err := CheckPartition("t", 1, 2); err != nil {
		t.Errorf("CheckPartition(t, 1 of 2) = %v, want nil", err)
	}
}
