package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// kcat's -o e@UNIXMS stops a partition at the first record whose
// timestamp is at or after UNIXMS; until such a record arrives it keeps
// consuming (without -e it follows the partition). consume instead turns
// e@ into an offset up front (OffsetForTime, which answers the current end
// when no record is that late yet), so with a stop time in the future it
// exits at the current end, as if -e had been given, and never prints the
// records appended before the stop time.
func TestReviewPlug_ConsumeStopTimeInFutureKeepsFollowing(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "a\nb\n", "produce", "t", "-q")
	stop := time.Now().Add(time.Hour).UnixMilli()
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	var out, errOut syncBuffer
	started := time.Now()
	err := run(ctx, []string{"--data-dir", dir, "consume", "t", "-q", "-o", "beginning", "-o", fmt.Sprintf("e@%d", stop)}, strings.NewReader(""), &out, &errOut)
	if err != nil {
		t.Fatalf("consume: %v\n%s", err, errOut.String())
	}
	if out.String() != "a\nb\n" {
		t.Errorf("consume printed %q, want a and b", out.String())
	}
	if el := time.Since(started); ctx.Err() == nil {
		t.Errorf("consume -o e@<an hour from now> without -e exited after %s at the end of the partition; kcat keeps consuming until a record at or after the stop time", el.Round(time.Millisecond))
	}
}
