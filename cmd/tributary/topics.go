package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	tlog "github.com/tributary-io/tributary/log"
)

// topicAdmin manages topics (kafka-topics.sh).
type topicAdmin interface {
	CreateTopic(ctx context.Context, name string, partitions int, config map[string]string) error
	// ListTopics returns the names of the open topics, sorted.
	ListTopics(ctx context.Context) ([]string, error)
	// NotOpenedTopics returns the topics the log left closed at open (more
	// partitions than its limit), sorted by name; ListTopics leaves them out.
	NotOpenedTopics(ctx context.Context) ([]tlog.TopicNotOpenedError, error)
	// DescribeTopic describes an open topic; for a topic the log left
	// closed it returns a *tlog.TopicNotOpenedError.
	DescribeTopic(ctx context.Context, name string) (tlog.TopicDescription, error)
	// DescribeTopicConfig returns the id and configs of a topic, open or
	// closed, without its partitions (tlog.Log.DescribeTopicConfig).
	DescribeTopicConfig(ctx context.Context, name string) (tlog.TopicDescription, error)
	DeleteTopic(ctx context.Context, name string) error
	// CreatePartitions grows a topic to total partitions; it never shrinks.
	CreatePartitions(ctx context.Context, name string, total int) error
	AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) error
	// DeleteRecords moves a partition's log start offset up to offset (-1:
	// the high watermark) and returns it after the move.
	DeleteRecords(ctx context.Context, name string, partition int32, offset int64) (int64, error)
}

func newTopicsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Create, list, describe, alter and delete topics, and delete records",
		Long: `Manage the log's topics, as kafka-topics.sh does.

Topic configs use Kafka's names and defaults:
` + configHelp(),
	}
	cmd.AddCommand(newTopicsCreateCmd(a), newTopicsListCmd(a), newTopicsDescribeCmd(a), newTopicsDeleteCmd(a), newTopicsAlterCmd(a), newTopicsDeleteRecordsCmd(a))
	return cmd
}

func configHelp() string {
	var b strings.Builder
	for _, n := range tlog.ConfigNames() {
		def, _ := tlog.ConfigDefault(n)
		fmt.Fprintf(&b, "  %-26s %s (default %s)\n", n, tlog.ConfigDoc(n), def)
	}
	return b.String()
}

func newTopicsCreateCmd(a *app) *cobra.Command {
	var (
		partitions, replication int
		configs                 []string
		ifNotExists             bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: fmt.Sprintf(`Create a topic with --partitions partitions: at most %d, or $%s of the
process that opens the data directory. Every partition keeps files open and
a goroutine, so the embedded log caps the count to protect its data
directory (Kafka has no hard cap, but advises a few thousand partitions per
broker in all). A create is all or nothing: one that fails leaves no
partition directory behind.`, tlog.DefaultMaxPartitions, envMaxPartitions),
		Example: `  tributary topics create web.tracking --partitions 3
  tributary topics create users --partitions 6 --config cleanup.policy=compact --config retention.ms=-1`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			cfg, err := parseConfigs(cmd.CommandPath(), configs)
			if err != nil {
				return err
			}
			if partitions < 1 {
				return usageErrorf(cmd.CommandPath(), "--partitions %d: a topic needs at least 1 partition (at most %d, or $%s of the process that opens the data directory)", partitions, tlog.DefaultMaxPartitions, envMaxPartitions)
			}
			if replication != 1 {
				return usageErrorf(cmd.CommandPath(), "--replication-factor %d: this log runs on one node, so the only replication factor is 1", replication)
			}
			c, err := a.openOrCreate()
			if err != nil {
				return err
			}
			err = c.CreateTopic(cmd.Context(), name, partitions, cfg)
			if ifNotExists && errors.Is(err, tlog.ErrTopicExists) {
				return nil
			}
			if err != nil {
				return withHint(err, name)
			}
			fmt.Fprintf(a.stdout, "Created topic %s.\n", name)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&partitions, "partitions", 1, fmt.Sprintf("number of partitions (1 to %d, or $%s)", tlog.DefaultMaxPartitions, envMaxPartitions))
	f.StringArrayVar(&configs, "config", nil, "topic config override name=value (repeatable; tributary topics --help lists the names)")
	f.IntVar(&replication, "replication-factor", 1, "replicas per partition (only 1 on a single node)")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed quietly when the topic already exists")
	return cmd
}

func newTopicsListCmd(a *app) *cobra.Command {
	var excludeInternal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one per line",
		Long: `List topic names, one per line. A topic with more partitions than the limit
of the process that opened the data directory ($TRIBUTARY_MAX_PARTITIONS) is
not opened; its line says so after a TAB:
  big	(not opened: 1001 partitions, more than the limit of 1000; see tributary topics describe big)`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.open()
			if err != nil {
				return err
			}
			names, err := c.ListTopics(cmd.Context())
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			notOpened, err := c.NotOpenedTopics(cmd.Context())
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			lines := map[string]string{}
			for _, n := range names {
				lines[n] = n
			}
			for _, no := range notOpened {
				lines[no.Topic] = fmt.Sprintf("%s\t(not opened: %d partitions, more than the limit of %d; see tributary topics describe %s)", no.Topic, no.Partitions, no.Limit, no.Topic)
			}
			for _, n := range slices.Sorted(maps.Keys(lines)) {
				if excludeInternal && isInternalTopic(n) {
					continue
				}
				fmt.Fprintln(a.stdout, lines[n])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&excludeInternal, "exclude-internal", false, "leave out internal topics (names starting with _)")
	return cmd
}

// isInternalTopic reports whether a topic is one the log keeps for itself
// (committed offsets, source offsets, ...).
func isInternalTopic(name string) bool { return strings.HasPrefix(name, "_") }

func newTopicsDescribeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe [NAME...]",
		Short: "Describe topics (all of them when no name is given)",
		Long: `Describe topics in kafka-topics.sh --describe layout, TAB-separated: one line
per topic with its id, partition count, replication factor and the configs
set on the topic (overrides of the defaults), then one line per partition.
Partition lines end with two fields Kafka does not print: LogStartOffset and
LogEndOffset, the first offset still stored and the offset the next record
will get.

A topic with more partitions than the limit of the process that opened the
data directory ($TRIBUTARY_MAX_PARTITIONS) is not opened: it is described
from what the log stored for it, with a Status line after its topic line
saying which limit opens it, and partitions as Kafka shows offline ones
(Leader: none) whose offsets are unknown (-):
  Status: not opened (1001 partitions, more than the limit of 1000 per topic): open it with TRIBUTARY_MAX_PARTITIONS=1001, ...`,
		Example: `  tributary topics describe web.tracking`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.open()
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				if names, err = allTopicNames(cmd.Context(), c); err != nil {
					return fmt.Errorf("list topics: %w", err)
				}
			}
			for _, n := range names {
				if err := describeTopic(cmd.Context(), a, c, n); err != nil {
					return withHint(err, n)
				}
			}
			return nil
		},
	}
	return cmd
}

// allTopicNames returns the names of every topic of the log, sorted, those
// it left closed included.
func allTopicNames(ctx context.Context, c topicAdmin) ([]string, error) {
	names, err := c.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	notOpened, err := c.NotOpenedTopics(ctx)
	if err != nil {
		return nil, err
	}
	for _, no := range notOpened {
		names = append(names, no.Topic)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// describeTopic writes the description of one topic, open or closed.
func describeTopic(ctx context.Context, a *app, c topicAdmin, name string) error {
	d, err := c.DescribeTopic(ctx, name)
	var notOpened *tlog.TopicNotOpenedError
	if errors.As(err, &notOpened) {
		if d, err = c.DescribeTopicConfig(ctx, name); err != nil {
			return err
		}
		writeNotOpenedTopicDescription(a.stdout, d, notOpened, a.server != "")
		return nil
	}
	if err != nil {
		return err
	}
	writeTopicDescription(a.stdout, d)
	return nil
}

func writeTopicDescription(w io.Writer, d tlog.TopicDescription) {
	writeTopicLine(w, d, len(d.Partitions))
	for _, p := range d.Partitions {
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: %d\tLogEndOffset: %d\n",
			d.Name, p.Partition, p.LogStartOffset, p.LogEndOffset)
	}
}

// writeNotOpenedTopicDescription describes a topic the log left closed as
// writeTopicDescription describes an open one, from its stored id and
// configs (d) and its partition count (no), plus a Status line saying which
// limit opens it: that of the worker behind --server (viaServer), else
// that of this command. Its partitions have no leader, as Kafka shows
// offline ones, and their offsets are unknown (-).
func writeNotOpenedTopicDescription(w io.Writer, d tlog.TopicDescription, no *tlog.TopicNotOpenedError, viaServer bool) {
	writeTopicLine(w, d, no.Partitions)
	if viaServer {
		fmt.Fprintf(w, "Status: not opened (%d partitions, more than the worker's limit of %d per topic): restart the worker (`tributary run`) with %s=%d to open it, or delete it with `tributary topics delete %s`\n",
			no.Partitions, no.Limit, envMaxPartitions, no.Partitions, d.Name)
	} else {
		fmt.Fprintf(w, "Status: not opened (%d partitions, more than the limit of %d per topic): open it with %s=%d, for this command and for `tributary run`, or delete it with `tributary topics delete %s`\n",
			no.Partitions, no.Limit, envMaxPartitions, no.Partitions, d.Name)
	}
	for p := range no.Partitions {
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: none\tReplicas: 0\tIsr: 0\tLogStartOffset: -\tLogEndOffset: -\n", d.Name, p)
	}
}

// writeTopicLine writes the first line of a topic's description.
func writeTopicLine(w io.Writer, d tlog.TopicDescription, partitions int) {
	keys := make([]string, 0, len(d.Overrides))
	for k := range d.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cfgs := make([]string, len(keys))
	for i, k := range keys {
		cfgs[i] = k + "=" + d.Overrides[k]
	}
	fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: 1\tConfigs: %s\n",
		d.Name, d.ID, partitions, strings.Join(cfgs, ","))
}

func newTopicsDeleteCmd(a *app) *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and all its records",
		Long: `Delete a topic with all its records, all or nothing, and every consumer
group's committed offsets on it, as Kafka does. The internal topics
(__consumer_offsets, the worker's _tributary.*) cannot be deleted.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, err := a.open()
			if err != nil {
				return err
			}
			err = c.DeleteTopic(cmd.Context(), name)
			if ifExists && errors.Is(err, tlog.ErrUnknownTopic) {
				return nil
			}
			if err != nil {
				return withHint(err, name)
			}
			fmt.Fprintf(a.stdout, "Deleted topic %s.\n", name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed quietly when the topic does not exist")
	return cmd
}

func newTopicsAlterCmd(a *app) *cobra.Command {
	var (
		partitions int
		configs    []string
		deletes    []string
	)
	cmd := &cobra.Command{
		Use:   "alter NAME (--partitions N | --config name=value... | --delete-config name...)",
		Short: "Add partitions to a topic or change its configs",
		Long: `Add partitions to a topic (the count only grows: keyed records of existing
keys may land on other partitions afterwards, as in Kafka), set config
overrides with --config, or remove them with --delete-config so the default
applies again.`,
		Example: `  tributary topics alter web.tracking --partitions 6
  tributary topics alter web.tracking --config retention.ms=86400000 --delete-config segment.bytes`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			f := cmd.Flags()
			if !changed(f, "partitions") && len(configs) == 0 && len(deletes) == 0 {
				return usageErrorf(cmd.CommandPath(), "nothing to alter: give --partitions N, --config name=value or --delete-config name")
			}
			if changed(f, "partitions") && partitions < 1 {
				return usageErrorf(cmd.CommandPath(), "--partitions %d: give the new partition count, larger than the current one (see `tributary topics describe %s`)", partitions, name)
			}
			set, err := parseConfigs(cmd.CommandPath(), configs)
			if err != nil {
				return err
			}
			if err := checkConfigNames(cmd.CommandPath(), deletes); err != nil {
				return err
			}
			c, err := a.open()
			if err != nil {
				return err
			}
			if len(set) > 0 || len(deletes) > 0 {
				if err := c.AlterTopicConfig(cmd.Context(), name, set, deletes); err != nil {
					return withHint(err, name)
				}
				fmt.Fprintf(a.stdout, "Completed updating config for topic %s.\n", name)
			}
			if changed(f, "partitions") {
				if err := c.CreatePartitions(cmd.Context(), name, partitions); err != nil {
					return withHint(err, name)
				}
				fmt.Fprintf(a.stdout, "Topic %s now has %d partitions.\n", name, partitions)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&partitions, "partitions", 0, "new, larger partition count")
	f.StringArrayVar(&configs, "config", nil, "set a config override name=value (repeatable)")
	f.StringArrayVar(&deletes, "delete-config", nil, "remove a config override (repeatable)")
	return cmd
}

func newTopicsDeleteRecordsCmd(a *app) *cobra.Command {
	var (
		partition int32
		offset    int64
	)
	cmd := &cobra.Command{
		Use:   "delete-records NAME --partition P --offset N",
		Short: "Delete a partition's records below an offset",
		Long: `Delete the records of a partition below --offset, as kafka-delete-records.sh
does: the partition's log start offset moves up to it (-1: the end, every
record), durably before the command returns. Reads below it fail at once
(consumers from the beginning start there); retention removes the segments
lying wholly below it on its next pass. An offset past the end is an error;
one at or below the log start changes nothing. Internal topics and topics
whose cleanup.policy lacks delete are refused, as Kafka refuses them.
Prints the partition and its new log start offset (low_watermark).`,
		Example: `  tributary topics delete-records web.tracking --partition 0 --offset 1200
  tributary topics delete-records web.tracking --partition 2 --offset -1`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			f := cmd.Flags()
			if !changed(f, "partition") || !changed(f, "offset") {
				return usageErrorf(cmd.CommandPath(), "give --partition P and --offset N (-1 for the end of the partition)")
			}
			if partition < 0 {
				return usageErrorf(cmd.CommandPath(), "--partition %d: partitions are numbered from 0 (see `tributary topics describe %s`)", partition, name)
			}
			if offset < -1 {
				return usageErrorf(cmd.CommandPath(), "--offset %d: give an offset, or -1 for the end of the partition", offset)
			}
			c, err := a.open()
			if err != nil {
				return err
			}
			low, err := c.DeleteRecords(cmd.Context(), name, partition, offset)
			if err != nil {
				return withHint(err, name)
			}
			fmt.Fprintf(a.stdout, "partition: %s-%d\tlow_watermark: %d\n", name, partition, low)
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32Var(&partition, "partition", 0, "the partition")
	f.Int64Var(&offset, "offset", 0, "delete the records below this offset (-1: all of them)")
	return cmd
}

// parseConfigs turns name=value flags into a map, checked against the
// log's topic config table (names and values) before any I/O: a wrong one
// is a usage error (exit 2), whether the log is opened here or through
// --server.
func parseConfigs(cmdPath string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf(cmdPath, "--config %q: want name=value, e.g. retention.ms=86400000", kv)
		}
		m[k] = v
	}
	if err := tlog.ValidateConfig(m); err != nil {
		return nil, usageErrorf(cmdPath, "--config: %w", err)
	}
	return m, nil
}

// checkConfigNames checks the names of --delete-config against the log's
// topic config table before any I/O (a usage error, exit 2).
func checkConfigNames(cmdPath string, names []string) error {
	for _, n := range names {
		if _, ok := tlog.ConfigDefault(n); !ok {
			return usageErrorf(cmdPath, "--delete-config: %w: unknown topic config %q (valid: %s)", tlog.ErrInvalidConfig, n, strings.Join(tlog.ConfigNames(), ", "))
		}
	}
	return nil
}
