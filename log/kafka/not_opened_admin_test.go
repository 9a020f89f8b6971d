package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin requests for a topic the log left closed (more partitions than
// its limit), answered as Apache Kafka answers them for a topic whose
// partitions are all offline: what Kafka serves from its metadata (topic
// configs, committed offsets) is served; what needs the partitions is not.

// describeBigConfigs returns big's configs by name, as kadm describes them
// (DescribeConfigs), failing on any error.
func describeBigConfigs(t *testing.T, adm *kadm.Client) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(t.Context(), "big")
	if err != nil {
		t.Fatalf("describe configs of big: %v", err)
	}
	rc, err := rcs.On("big", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of big: %v, %v (%s); want its configs", err, rc.Err, rc.ErrMessage)
	}
	got := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		got[c.Key] = c
	}
	if len(got) != len(tlog.ConfigNames()) {
		t.Errorf("describe configs of big: %d configs, want all %d topic configs", len(got), len(tlog.ConfigNames()))
	}
	return got
}

// checkConfig fails unless configs hold name = value from source.
func checkConfig(t *testing.T, what string, configs map[string]kadm.Config, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := configs[name]
	if !ok {
		t.Errorf("%s: %s missing", what, name)
		return
	}
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s: %s = %q from %v, want %q from %v", what, name, c.MaybeValue(), c.Source, value, source)
	}
}

func configDefault(t *testing.T, name string) string {
	t.Helper()
	v, ok := tlog.ConfigDefault(name)
	if !ok {
		t.Fatalf("no default for %s", name)
	}
	return v
}

// TestDescribeConfigs_NotOpenedTopic_FromStoredConfig: as Kafka
// (ConfigHelper.describeConfigs describes any topic of the metadata from
// its stored config, whatever its partitions' leaders, so that
// kafka-configs.sh --describe works on an offline topic), the configs of a
// topic the log left closed are described from what the data directory
// stores for it, overrides and defaults with their sources, without
// opening it.
func TestDescribeConfigs_NotOpenedTopic_FromStoredConfig(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))

	got := describeBigConfigs(t, adm)
	checkConfig(t, "big", got, tlog.ConfigRetentionMs, bigRetentionMs, kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, "big", got, tlog.ConfigCleanupPolicy, configDefault(t, tlog.ConfigCleanupPolicy), kmsg.ConfigSourceDefaultConfig)
	ns.checkStillNotOpened(t)
}

// TestAlterConfigs_NotOpenedTopic_StoredWithoutOpening: Kafka alters the
// configs of any topic of its metadata (the controller's
// ConfigurationControlManager checks only that the topic exists, not its
// leaders), so IncrementalAlterConfigs and AlterConfigs change the stored
// configs of a topic the log left closed, without opening it, and
// validate_only checks them alike; the topic opens with them once the
// limit is raised (see log's TestAlterTopicConfig_NotOpenedTopic).
func TestAlterConfigs_NotOpenedTopic_StoredWithoutOpening(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))
	ctx := t.Context()

	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tlog.ConfigSegmentMs, Value: kadm.StringPtr("60000")}}
	resps, err := adm.AlterTopicConfigs(ctx, set, "big")
	if r, _ := resps.On("big", nil); err != nil || r.Err != nil {
		t.Fatalf("incremental alter of big: %v, %v (%s); want it stored", err, r.Err, r.ErrMessage)
	}
	got := describeBigConfigs(t, adm)
	checkConfig(t, "after SET", got, tlog.ConfigSegmentMs, "60000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, "after SET", got, tlog.ConfigRetentionMs, bigRetentionMs, kmsg.ConfigSourceDynamicTopicConfig)

	bad := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: tlog.ConfigSegmentMs, Value: kadm.StringPtr("-5")}}
	resps, err = adm.ValidateAlterTopicConfigs(ctx, bad, "big")
	if r, _ := resps.On("big", nil); err != nil || !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("validate_only alter of big to segment.ms=-5: %v, %v; want INVALID_CONFIG", err, r.Err)
	}

	// AlterConfigs replaces every override: segment.ms goes back to its
	// default.
	state := []kadm.AlterConfig{{Name: tlog.ConfigRetentionMs, Value: kadm.StringPtr("7200000")}}
	resps, err = adm.AlterTopicConfigsState(ctx, state, "big")
	if r, _ := resps.On("big", nil); err != nil || r.Err != nil {
		t.Fatalf("alter (state) of big: %v, %v (%s); want it stored", err, r.Err, r.ErrMessage)
	}
	got = describeBigConfigs(t, adm)
	checkConfig(t, "after AlterConfigs", got, tlog.ConfigRetentionMs, "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, "after AlterConfigs", got, tlog.ConfigSegmentMs, configDefault(t, tlog.ConfigSegmentMs), kmsg.ConfigSourceDefaultConfig)
	ns.checkStillNotOpened(t)
}

// TestCreatePartitions_NotOpenedTopic: Kafka grows an offline topic (the
// controller assigns the new partitions without looking at the old ones'
// leaders), but here every new partition count is over the limit that left
// the topic closed: growing it is refused as before, KAFKA_STORAGE_ERROR,
// with a message naming the limit that lets it grow. A count that does not
// grow it is INVALID_PARTITIONS, as Kafka answers, for validate_only too;
// nothing changes.
func TestCreatePartitions_NotOpenedTopic(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))
	ctx := t.Context()

	for _, validate := range []bool{true, false} {
		update := adm.UpdatePartitions
		if validate {
			update = adm.ValidateUpdatePartitions
		}
		same, err := update(ctx, 4, "big")
		if err != nil {
			t.Fatal(err)
		}
		if r := same["big"]; !errors.Is(r.Err, kerr.InvalidPartitions) {
			t.Errorf("validate_only=%v: set big to its 4 partitions: %v (%s), want INVALID_PARTITIONS", validate, r.Err, r.ErrMessage)
		}
		grow, err := update(ctx, 6, "big")
		if err != nil {
			t.Fatal(err)
		}
		r := grow["big"]
		if !errors.Is(r.Err, kerr.KafkaStorageError) {
			t.Errorf("validate_only=%v: grow big to 6: %v, want KAFKA_STORAGE_ERROR", validate, r.Err)
		}
		if !strings.Contains(r.ErrMessage, "TRIBUTARY_MAX_PARTITIONS=6") {
			t.Errorf("validate_only=%v: grow big to 6: message %q, want it to say which limit lets it grow", validate, r.ErrMessage)
		}
	}
	ns.checkStillNotOpened(t)
}

// TestOffsetCommit_NotOpenedTopic_Accepted: as Kafka
// (KafkaApis.handleOffsetCommitRequest checks that the topic and partition
// are in the metadata, which an offline partition is; the group
// coordinator does not look at leaders), a commit to a partition of a
// topic the log left closed is stored, from outside the group (generation
// -1, kafka-consumer-groups.sh --reset-offsets) and from a member; a
// partition past its count is UNKNOWN_TOPIC_OR_PARTITION. OffsetFetch
// answers the commits, and the group is listed and described as Empty.
func TestOffsetCommit_NotOpenedTopic_Accepted(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))
	ctx := t.Context()

	var os kadm.Offsets
	for p := range int32(4) {
		os.AddOffset("big", p, int64(10+p), -1)
	}
	os.AddOffset("big", 4, 1, -1)
	committed, err := adm.CommitOffsets(ctx, "reset", os)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if r, ok := committed.Lookup("big", p); !ok || r.Err != nil {
			t.Errorf("commit big/%d from outside the group: %v (answered %v), want it stored", p, r.Err, ok)
		}
	}
	if r, _ := committed.Lookup("big", 4); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("commit big/4 (big has 4 partitions): %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}

	fetched, err := adm.FetchOffsets(ctx, "reset")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if r, ok := fetched.Lookup("big", p); !ok || r.Err != nil || r.At != int64(10+p) {
			t.Errorf("fetch offsets of big/%d: %+v (found %v), want %d", p, r, ok, 10+p)
		}
	}
	if _, ok := fetched.Lookup("big", 4); ok {
		t.Errorf("fetch offsets: big/4 committed, want nothing stored for it")
	}
	described, err := adm.DescribeGroups(ctx, "reset")
	if err != nil {
		t.Fatal(err)
	}
	if g := described["reset"]; g.Err != nil || g.State != "Empty" {
		t.Errorf("describe group reset: state %q, error %v; want Empty", g.State, g.Err)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["reset"]; !ok {
		t.Errorf("ListGroups = %v, want the group reset (its offsets are of big)", listed.Groups())
	}

	// A member of a group (here consuming small) commits to big with its
	// generation.
	m := ns.member(t, "members", "small")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go pollLoop(runCtx, m.c, make(chan *kgo.Record, 1))
	waitFor(t, "the member's assignment of small", 10*time.Second, func() bool { return len(m.partitions()) == 1 })
	var commitErr error
	m.c.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"big": {2: {Epoch: -1, Offset: 7}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							commitErr = kerr.ErrorForCode(rp.ErrorCode)
						}
					}
				}
			}
		})
	if commitErr != nil {
		t.Errorf("member commit of big/2: %v, want it stored", commitErr)
	}
	if off, ok := ns.log.Groups().CommittedOffset("members", "big", 2); !ok || off != 7 {
		t.Errorf("members' committed offset of big/2 = %d (found %v), want 7", off, ok)
	}
	ns.checkStillNotOpened(t)
}
