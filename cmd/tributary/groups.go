package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	tlog "github.com/tributary-io/tributary/log"
)

// groupAdmin inspects and manages consumer groups
// (kafka-consumer-groups.sh).
type groupAdmin interface {
	// ListGroups returns group names, sorted.
	ListGroups(ctx context.Context) ([]string, error)
	// DescribeGroup returns one row per partition of every topic the group
	// has offsets for; tlog.ErrUnknownGroup when it has none.
	DescribeGroup(ctx context.Context, group string) ([]tlog.PartitionLag, error)
	// PlanReset computes an offset reset without changing anything.
	PlanReset(ctx context.Context, group string, spec tlog.ResetSpec) ([]tlog.ResetPlan, error)
	// ApplyReset commits a plan from PlanReset.
	ApplyReset(ctx context.Context, group string, plan []tlog.ResetPlan) error
	// DeleteGroup removes a group and its committed offsets.
	DeleteGroup(ctx context.Context, group string) error
}

func newGroupsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List, describe, reset and delete consumer groups",
		Long:  `Inspect and manage consumer groups and their committed offsets, as kafka-consumer-groups.sh does.`,
	}
	cmd.AddCommand(newGroupsListCmd(a), newGroupsDescribeCmd(a), newGroupsResetCmd(a), newGroupsDeleteCmd(a))
	return cmd
}

// groupHint explains the group errors users meet.
func groupHint(err error, group string) error {
	var notOpened *tlog.TopicNotOpenedError
	switch {
	case errors.As(err, &notOpened):
		return err // the topic exists: its message says why it is not open
	case errors.Is(err, tlog.ErrUnknownGroup):
		return &hintError{msg: fmt.Sprintf("consumer group %s does not exist (it has no committed offsets); list groups with `tributary groups list`", group), err: err}
	case errors.Is(err, tlog.ErrUnknownTopic):
		return &hintError{msg: fmt.Sprintf("%v; list topics with `tributary topics list`", err), err: err}
	}
	return err
}

func newGroupsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List consumer groups, one per line",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.open()
			if err != nil {
				return err
			}
			names, err := c.ListGroups(cmd.Context())
			if err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			for _, n := range names {
				fmt.Fprintln(a.stdout, n)
			}
			return nil
		},
	}
}

func newGroupsDescribeCmd(a *app) *cobra.Command {
	var all bool
	var named []string
	cmd := &cobra.Command{
		Use:   "describe GROUP... | --group GROUP... | --all-groups",
		Short: "Show a group's committed offsets and lag per partition",
		Long: `Show, for every partition of the topics a group has committed offsets for,
the committed offset (CURRENT-OFFSET), the end of the partition
(LOG-END-OFFSET) and the difference (LAG), in kafka-consumer-groups.sh
--describe columns. "-" marks a missing value: no commit on that partition,
a topic that no longer exists, or no member owning the partition.

LAG is LOG-END-OFFSET minus CURRENT-OFFSET, as kafka-consumer-groups.sh
computes it, so it is negative when the committed offset is past the end of
the partition: the records the group had read up to are gone (the topic was
deleted and created again, or data was lost). Such a partition also gets a
warning on stderr; the group's consumers then restart from their reset
policy (auto.offset.reset), so move its offsets deliberately with
reset-offsets.`,
		Example: `  tributary groups describe billing`,
		RunE: func(cmd *cobra.Command, args []string) error {
			args = append(args, named...)
			if all == (len(args) > 0) {
				return usageErrorf(cmd.CommandPath(), "give group names or --all-groups")
			}
			c, err := a.open()
			if err != nil {
				return err
			}
			groups := args
			if all {
				if groups, err = c.ListGroups(cmd.Context()); err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
			}
			var rows []tlog.PartitionLag
			for _, g := range groups {
				r, err := c.DescribeGroup(cmd.Context(), g)
				if err != nil {
					return groupHint(err, g)
				}
				if !hasMembers(r) {
					fmt.Fprintf(a.stderr, "Consumer group '%s' has no active members.\n", g)
				}
				rows = append(rows, r...)
			}
			return writeGroupDescription(a.stdout, a.stderr, rows)
		},
	}
	cmd.Flags().BoolVar(&all, "all-groups", false, "describe every group")
	cmd.Flags().StringArrayVar(&named, "group", nil, "a group to describe, as kafka-consumer-groups.sh --group takes it (the same as naming it)")
	return cmd
}

func hasMembers(rows []tlog.PartitionLag) bool {
	for _, r := range rows {
		if r.ConsumerID != "" {
			return true
		}
	}
	return false
}

// writeGroupDescription prints the rows as a table to w and a warning to
// warn for every partition whose committed offset is past its end.
func writeGroupDescription(w, warn io.Writer, rows []tlog.PartitionLag) error {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	var past []tlog.PartitionLag
	for _, r := range rows {
		lag := "-"
		if r.CurrentOffset >= 0 && r.LogEndOffset >= 0 {
			// Not r.Lag, which stops at 0 (the lag metric does): a committed
			// offset past the end must show.
			lag = strconv.FormatInt(r.LogEndOffset-r.CurrentOffset, 10)
			if r.CurrentOffset > r.LogEndOffset {
				past = append(past, r)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Group, r.Topic, r.Partition,
			offsetOrDash(r.CurrentOffset), offsetOrDash(r.LogEndOffset), lag,
			orDash(r.ConsumerID), orDash(r.Host), orDash(r.ClientID))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range past {
		fmt.Fprintf(warn, "Warning: group %s, %s-%d: committed offset %d is past the log end offset %d: the records up to it are gone (the topic was deleted and created again, or data was lost), and the %d records now in the partition are not counted as lag. Its consumers will restart by their auto.offset.reset policy; to read the partition from its start: tributary groups reset-offsets --group %s --topic %s:%d --to-earliest --execute\n",
			r.Group, r.Topic, r.Partition, r.CurrentOffset, r.LogEndOffset, r.LogEndOffset, r.Group, r.Topic, r.Partition)
	}
	return nil
}

func offsetOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type resetOptions struct {
	group      string
	topics     []string
	allTopics  bool
	toEarliest bool
	toLatest   bool
	toOffset   int64
	toDatetime string
	byDuration string
	shiftBy    int64
	toCurrent  bool
	execute    bool
	dryRun     bool
}

func newGroupsResetCmd(a *app) *cobra.Command {
	var o resetOptions
	cmd := &cobra.Command{
		Use:   "reset-offsets --group GROUP (--topic T[:P,...]... | --all-topics) MODE [--execute]",
		Short: "Move a group's committed offsets (a dry run unless --execute)",
		Long: `Compute new committed offsets for a group and print them as
GROUP TOPIC PARTITION NEW-OFFSET; only --execute stores them. The group must
have no active consumers: stop them first.

Scope: --topic orders (every partition), --topic orders:0,1 (repeatable),
or --all-topics (every partition the group has committed offsets for).

Exactly one MODE:
  --to-earliest            the oldest offset still stored
  --to-latest              the end of each partition
  --to-offset N            offset N
  --to-datetime ISO        the first record at or after a time, e.g.
                           2026-01-01T00:00:00.000 (UTC unless a zone is given)
  --by-duration PnDTnHnM   the first record at or after now minus a duration,
                           e.g. P1DT2H
  --shift-by N             the committed offset moved by N (negative: back)
  --to-current             the committed offset (no change; the end when none)

New offsets outside what a partition holds are clamped to its first or end
offset, with a warning on stderr.`,
		Example: `  tributary groups reset-offsets --group billing --topic orders --to-earliest
  tributary groups reset-offsets --group billing --topic orders:0,1 --shift-by -100 --execute
  tributary groups reset-offsets --group billing --all-topics --by-duration PT30M --execute`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf(cmd.CommandPath(), "%s takes no arguments, got %q: name the group with --group %s", cmd.CommandPath(), args, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReset(cmd, a, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.group, "group", "", "the consumer group (required)")
	f.StringArrayVar(&o.topics, "topic", nil, "topic to reset, optionally with partitions: T or T:0,1 (repeatable)")
	f.BoolVar(&o.allTopics, "all-topics", false, "reset every partition the group has committed offsets for")
	f.BoolVar(&o.toEarliest, "to-earliest", false, "reset to the oldest offset still stored")
	f.BoolVar(&o.toLatest, "to-latest", false, "reset to the end of each partition")
	f.Int64Var(&o.toOffset, "to-offset", 0, "reset to this offset")
	f.StringVar(&o.toDatetime, "to-datetime", "", "reset to the first record at or after this time (YYYY-MM-DDTHH:mm:SS.sss, UTC unless a zone is given)")
	f.StringVar(&o.byDuration, "by-duration", "", "reset to the first record at or after now minus this ISO-8601 duration (PnDTnHnMnS)")
	f.Int64Var(&o.shiftBy, "shift-by", 0, "move the committed offsets by N (negative: back)")
	f.BoolVar(&o.toCurrent, "to-current", false, "reset to the committed offset (the end when none)")
	f.BoolVar(&o.execute, "execute", false, "store the new offsets")
	f.BoolVar(&o.dryRun, "dry-run", false, "only print the new offsets (the default)")
	return cmd
}

func runReset(cmd *cobra.Command, a *app, o resetOptions) error {
	path := cmd.CommandPath()
	f := cmd.Flags()
	if o.group == "" {
		return usageErrorf(path, "--group is required")
	}
	if o.execute && o.dryRun {
		return usageErrorf(path, "--execute and --dry-run contradict each other; give one")
	}
	spec := tlog.ResetSpec{AllTopics: o.allTopics}
	if o.allTopics == (len(o.topics) > 0) {
		return usageErrorf(path, "give the scope: --topic T[:P,...] (repeatable) or --all-topics")
	}
	for _, t := range o.topics {
		sc, err := tlog.ParseTopicScope(t)
		if err != nil {
			return usageErrorf(path, "--topic: %v", err)
		}
		spec.Topics = append(spec.Topics, sc)
	}
	var modes []string
	if o.toEarliest {
		modes = append(modes, "--to-earliest")
		spec.Mode = tlog.ResetToEarliest
	}
	if o.toLatest {
		modes = append(modes, "--to-latest")
		spec.Mode = tlog.ResetToLatest
	}
	if changed(f, "to-offset") {
		modes = append(modes, "--to-offset")
		spec.Mode, spec.Offset = tlog.ResetToOffset, o.toOffset
	}
	if changed(f, "to-datetime") {
		modes = append(modes, "--to-datetime")
		t, err := tlog.ParseResetDatetime(o.toDatetime)
		if err != nil {
			return usageErrorf(path, "--to-datetime: %v", err)
		}
		spec.Mode, spec.Time = tlog.ResetToDatetime, t
	}
	if changed(f, "by-duration") {
		modes = append(modes, "--by-duration")
		d, err := tlog.ParseResetDuration(o.byDuration)
		if err != nil {
			return usageErrorf(path, "--by-duration: %v", err)
		}
		spec.Mode, spec.Duration = tlog.ResetByDuration, d
	}
	if changed(f, "shift-by") {
		modes = append(modes, "--shift-by")
		spec.Mode, spec.Shift = tlog.ResetShiftBy, o.shiftBy
	}
	if o.toCurrent {
		modes = append(modes, "--to-current")
		spec.Mode = tlog.ResetToCurrent
	}
	if len(modes) != 1 {
		got := "none"
		if len(modes) > 1 {
			got = strings.Join(modes, ", ")
		}
		return usageErrorf(path, "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration, --shift-by, --to-current (got %s)", got)
	}

	c, err := a.open()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	plan, err := c.PlanReset(ctx, o.group, spec)
	if err != nil {
		return groupHint(err, o.group)
	}
	for _, r := range plan {
		if r.Warning != "" {
			fmt.Fprintf(a.stderr, "Warning: %s\n", r.Warning)
		}
	}
	if o.execute {
		if err := c.ApplyReset(ctx, o.group, plan); err != nil {
			return groupHint(err, o.group)
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
	for _, r := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.Group, r.Topic, r.Partition, r.NewOffset)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if !o.execute {
		fmt.Fprintln(a.stderr, "Dry run: nothing changed. Add --execute to store these offsets.")
	}
	return nil
}

func newGroupsDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a consumer group and its committed offsets",
		Long: `Delete a consumer group and its committed offsets, as
kafka-consumer-groups.sh --delete does. As Kafka refuses to delete a group
that has members, a group that a running or paused sink connector owns is
refused: stop the connector first (tributary connectors stop NAME), or move
its offsets with tributary connectors offsets NAME --set or --reset.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			g := args[0]
			c, err := a.open()
			if err != nil {
				return err
			}
			if err := c.DeleteGroup(cmd.Context(), g); err != nil {
				return groupHint(err, g)
			}
			fmt.Fprintf(a.stdout, "Deletion of requested consumer groups ('%s') was successful.\n", g)
			return nil
		},
	}
}
