package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tlog "github.com/tributary-io/tributary/log"
)

// embeddedClient is the log client that opens the data directory in this
// process. The directory is locked while it is open: a second process gets
// an error naming the holder.
type embeddedClient struct {
	l *tlog.Log
	// autoPartitions is the partition count of topics created by a first
	// produce (Kafka's num.partitions).
	autoPartitions int
}

var _ logClient = (*embeddedClient)(nil)

// envMaxPartitions sets the most partitions a topic of the embedded log may
// have (tlog.Options.MaxPartitions), in every process that opens the data
// directory.
const envMaxPartitions = "TRIBUTARY_MAX_PARTITIONS"

// maxPartitionsFromEnv returns $TRIBUTARY_MAX_PARTITIONS, 0 (the log's
// default) when unset.
func maxPartitionsFromEnv() (int, error) {
	v := os.Getenv(envMaxPartitions)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number of partitions per topic", envMaxPartitions, v)
	}
	return n, nil
}

// logMetaFile is the file at the top of every data directory that holds a
// log (its topics; see the on-disk layout in log/doc.go).
const logMetaFile = "meta.json"

// dataDirHint says how to point a command at a log.
const dataDirHint = "give the log's directory (a pipeline's log.dir) with --data-dir DIR or " + envDataDir + ", or reach the worker that holds it with --server ADDR"

// checkDataDir returns an error when dir holds no log for a command to read:
// it does not exist, or it holds other files but no meta.json (the parent of
// a log, say ./data after the quickstart, whose log is ./data/quickstart).
// Opening such a directory would make an empty log there and report every
// topic missing. An empty directory (or one with only the lock file of a
// first open that was killed) is an empty log.
func checkDataDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data directory %s does not exist, so it holds no log; %s", dir, dataDirHint)
	}
	if err != nil {
		return nil // opening it reports what is wrong
	}
	var logs []string
	others := false
	for _, e := range ents {
		switch e.Name() {
		case logMetaFile:
			return nil
		case ".lock": // a log's first open, killed before it wrote meta.json
			continue
		}
		others = true
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), logMetaFile)); err == nil {
				logs = append(logs, filepath.Join(dir, e.Name()))
			}
		}
	}
	if !others {
		return nil // an empty directory: opening it makes the empty log
	}
	if len(logs) > 0 {
		return fmt.Errorf("data directory %s holds no log (no %s), but %s does: give --data-dir %s (or %s), or reach the worker that holds it with --server ADDR",
			dir, logMetaFile, strings.Join(logs, ", "), logs[0], envDataDir)
	}
	return fmt.Errorf("data directory %s holds no log (no %s, but other files); %s", dir, logMetaFile, dataDirHint)
}

func openEmbedded(dir string, logger *slog.Logger) (*embeddedClient, error) {
	maxParts, err := maxPartitionsFromEnv()
	if err != nil {
		return nil, err
	}
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger, MaxPartitions: maxParts})
	if err != nil {
		return nil, err
	}
	return &embeddedClient{l: l, autoPartitions: 1}, nil
}

func (c *embeddedClient) Close() error { return c.l.Close() }

// Topics.

func (c *embeddedClient) CreateTopic(_ context.Context, name string, partitions int, config map[string]string) error {
	return c.l.CreateTopic(name, partitions, config)
}

func (c *embeddedClient) ListTopics(context.Context) ([]string, error) {
	return c.l.ListTopics(), nil
}

func (c *embeddedClient) NotOpenedTopics(context.Context) ([]tlog.TopicNotOpenedError, error) {
	return c.l.NotOpenedTopics(), nil
}

func (c *embeddedClient) DescribeTopic(_ context.Context, name string) (tlog.TopicDescription, error) {
	return c.l.DescribeTopic(name)
}

func (c *embeddedClient) DescribeTopicConfig(_ context.Context, name string) (tlog.TopicDescription, error) {
	return c.l.DescribeTopicConfig(name)
}

func (c *embeddedClient) DeleteTopic(_ context.Context, name string) error {
	return c.l.DeleteTopic(name)
}

func (c *embeddedClient) CreatePartitions(_ context.Context, name string, total int) error {
	return c.l.CreatePartitions(name, total)
}

func (c *embeddedClient) AlterTopicConfig(_ context.Context, name string, set map[string]string, remove []string) error {
	return c.l.AlterTopicConfig(name, set, remove)
}

// Produce.

func (c *embeddedClient) Partitions(_ context.Context, topic string, create bool) (int, error) {
	n, err := c.l.Partitions(topic)
	if err == nil || !create || !errors.Is(err, tlog.ErrUnknownTopic) {
		return n, err
	}
	if err := c.l.CreateTopic(topic, c.autoPartitions, nil); err != nil && !errors.Is(err, tlog.ErrTopicExists) {
		return 0, err
	}
	return c.l.Partitions(topic)
}

func (c *embeddedClient) DeleteRecords(_ context.Context, name string, partition int32, offset int64) (int64, error) {
	return c.l.DeleteRecords(name, partition, offset)
}

func (c *embeddedClient) Append(ctx context.Context, topic string, partition int32, recs []tlog.Record) (int64, error) {
	return c.l.Append(ctx, topic, partition, recs)
}

// Consume.

func (c *embeddedClient) Offsets(_ context.Context, topic string, partition int32) (int64, int64, error) {
	return c.l.Offsets(topic, partition)
}

func (c *embeddedClient) OffsetForTime(_ context.Context, topic string, partition int32, t time.Time) (int64, bool, error) {
	return c.l.OffsetForTime(topic, partition, t)
}

func (c *embeddedClient) Read(ctx context.Context, topic string, partition int32, offset int64, opts tlog.ReadOptions) (tlog.ReadResult, error) {
	return c.l.Read(ctx, topic, partition, offset, opts)
}

func (c *embeddedClient) CommittedOffset(_ context.Context, group, topic string, partition int32) (int64, bool, error) {
	off, ok := c.l.Groups().CommittedOffset(group, topic, partition)
	return off, ok, nil
}

func (c *embeddedClient) Commit(ctx context.Context, group string, offsets []tlog.OffsetCommit) error {
	return c.l.Groups().Commit(ctx, group, offsets)
}

// Groups.

func (c *embeddedClient) ListGroups(context.Context) ([]string, error) {
	return c.l.Groups().List(), nil
}

func (c *embeddedClient) DescribeGroup(_ context.Context, group string) ([]tlog.PartitionLag, error) {
	return c.l.Groups().Describe(group)
}

func (c *embeddedClient) PlanReset(_ context.Context, group string, spec tlog.ResetSpec) ([]tlog.ResetPlan, error) {
	return c.l.Groups().PlanReset(group, spec)
}

func (c *embeddedClient) ApplyReset(ctx context.Context, group string, plan []tlog.ResetPlan) error {
	return c.l.Groups().ApplyReset(ctx, group, plan)
}

func (c *embeddedClient) DeleteGroup(ctx context.Context, group string) error {
	return c.l.Groups().Delete(ctx, group)
}
