package kafka

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/syncbuf"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// notOpenedServer is a listener on a data directory holding "big" (4
// partitions, created under a limit of 5, with retention.ms set on it:
// bigRetentionMs) and "small" (1 partition),
// opened with a limit of 3 partitions per topic, so that "big" is left
// closed. logs holds the listener's log lines; bigID is big's topic id.
type notOpenedServer struct {
	*testServer
	logs  *syncbuf.Buffer
	bigID [16]byte
}

// bigRetentionMs is the retention.ms override big was created with.
const bigRetentionMs = "3600000"

func startNotOpenedServer(t *testing.T) *notOpenedServer {
	t.Helper()
	dir := t.TempDir()
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: quietLogger(), MaxPartitions: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("big", 4, map[string]string{tlog.ConfigRetentionMs: bigRetentionMs}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("small", 1, nil); err != nil {
		t.Fatal(err)
	}
	d, err := l.DescribeTopic("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = tlog.Open(tlog.Options{Dir: dir, Logger: quietLogger(), MaxPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	logs := new(syncbuf.Buffer)
	ts := serveLog(t, l, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	return &notOpenedServer{testServer: ts, logs: logs, bigID: topicID(d.ID)}
}

// checkStillNotOpened fails unless big is still the one closed topic of 4
// partitions: nothing the clients asked created a second copy of it.
func (ns *notOpenedServer) checkStillNotOpened(t *testing.T) {
	t.Helper()
	if got := ns.log.ListTopics(); slices.Contains(got, "big") {
		t.Errorf("ListTopics = %q: big was opened or made again", got)
	}
	no := ns.log.NotOpenedTopics()
	if len(no) != 1 || no[0].Topic != "big" || no[0].Partitions != 4 {
		t.Errorf("NotOpenedTopics = %+v, want big with its 4 partitions", no)
	}
}

// checkBigWithoutLeader checks big's metadata as Kafka gives a topic whose
// partitions are all offline (KRaftMetadataCache: a partition without a
// live leader is LEADER_NOT_AVAILABLE, leader -1): it exists, with its id
// and its 4 partitions, none of which a client can use yet.
func checkBigWithoutLeader(t *testing.T, what string, td kadm.TopicDetail, wantID [16]byte) {
	t.Helper()
	if td.Err != nil {
		t.Errorf("%s: topic error %v, want none (the topic exists)", what, td.Err)
	}
	if td.ID != wantID {
		t.Errorf("%s: topic id %x, want %x", what, td.ID, wantID)
	}
	if len(td.Partitions) != 4 {
		t.Fatalf("%s: %d partitions, want 4", what, len(td.Partitions))
	}
	for p := range int32(4) {
		pd, ok := td.Partitions[p]
		if !ok {
			t.Errorf("%s: partition %d missing", what, p)
			continue
		}
		if !errors.Is(pd.Err, kerr.LeaderNotAvailable) || pd.Leader != -1 {
			t.Errorf("%s: partition %d: error %v, leader %d; want LEADER_NOT_AVAILABLE, leader -1", what, p, pd.Err, pd.Leader)
		}
		if !slices.Equal(pd.Replicas, []int32{nodeID}) || !slices.Equal(pd.OfflineReplicas, []int32{nodeID}) {
			t.Errorf("%s: partition %d: replicas %v, offline %v; want [%d] and [%d]", what, p, pd.Replicas, pd.OfflineReplicas, nodeID, nodeID)
		}
	}
}

// TestMetadata_NotOpenedTopic_ExistsWithoutLeader: a topic the log left
// closed (more partitions than its limit) is in the Metadata answers, for
// all topics, by name and by id, as a topic without a leader, never as an
// unknown topic a client would auto-create; asking for it by name says in
// the log which limit to raise.
func TestMetadata_NotOpenedTopic_ExistsWithoutLeader(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))

	all, err := adm.ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !all.Has("small") || !all.Has("big") {
		t.Fatalf("ListTopics (all) = %v, want big and small", all.Names())
	}
	checkBigWithoutLeader(t, "ListTopics (all)", all["big"], ns.bigID)

	named, err := adm.ListTopics(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	checkBigWithoutLeader(t, "ListTopics(big)", named["big"], ns.bigID)

	// A client that allows auto-creation (a producer's metadata) gets the
	// same answer, and nothing is created.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("big")
	req.Topics = append(req.Topics, rt)
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = ns.bigID
	req.Topics = append(req.Topics, byID)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(t.Context(), ns.client(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 {
		t.Fatalf("metadata for big by name and by id: %d topics, want 2", len(resp.Topics))
	}
	for i, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != "big" || mt.ErrorCode != 0 || len(mt.Partitions) != 4 {
			t.Errorf("metadata topic %d = %v, error %d, %d partitions; want big, no error, 4 partitions", i, mt.Topic, mt.ErrorCode, len(mt.Partitions))
		}
	}
	ns.checkStillNotOpened(t)

	logs := ns.logs.String()
	for _, s := range []string{"topic=big", "TRIBUTARY_MAX_PARTITIONS=4", "limit"} {
		if !strings.Contains(logs, s) {
			t.Errorf("listener logs do not say %q:\n%s", s, logs)
		}
	}
}

// TestCreateTopics_NotOpenedTopic_AlreadyExists: creating a topic under
// the name of one the log left closed is TOPIC_ALREADY_EXISTS, as Kafka
// answers for any topic it has, with validate_only too, and the message
// says how to open it; the closed topic is untouched.
func TestCreateTopics_NotOpenedTopic_AlreadyExists(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))

	validated, err := adm.ValidateCreateTopics(t.Context(), 2, -1, nil, "big")
	if err != nil {
		t.Fatal(err)
	}
	// (CreateTopic returns the topic's error as its own.)
	created, _ := adm.CreateTopic(t.Context(), 2, -1, nil, "big")
	for what, r := range map[string]kadm.CreateTopicResponse{"validate_only": validated["big"], "create": created} {
		if !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Errorf("%s big: %v, want TOPIC_ALREADY_EXISTS", what, r.Err)
		}
		if !strings.Contains(r.ErrMessage, "TRIBUTARY_MAX_PARTITIONS=4") {
			t.Errorf("%s big: message %q, want it to say which limit opens the topic", what, r.ErrMessage)
		}
	}
	ns.checkStillNotOpened(t)
}

// TestProduceFetch_NotOpenedTopic_StorageError: Produce, Fetch and
// ListOffsets for a partition of a topic the log left closed are answered
// KAFKA_STORAGE_ERROR, as Kafka's broker answers for a partition it holds
// in an offline log directory (ReplicaManager: HostedPartition.Offline): a
// retriable error that makes clients refresh their metadata and wait,
// not UNKNOWN_TOPIC_OR_PARTITION.
func TestProduceFetch_NotOpenedTopic_StorageError(t *testing.T) {
	ns := startNotOpenedServer(t)
	rc := ns.raw(t)

	produced := do[*kmsg.ProduceResponse](rc, produceReq("big", testBatch(-1, -1, -1, "v")), 9)
	pp := produced.Topics[0].Partitions[0]
	if pp.ErrorCode != kerr.KafkaStorageError.Code {
		t.Errorf("produce to big/0: error code %d, want KAFKA_STORAGE_ERROR", pp.ErrorCode)
	}
	if pp.ErrorMessage == nil || !strings.Contains(*pp.ErrorMessage, "TRIBUTARY_MAX_PARTITIONS=4") {
		t.Errorf("produce to big/0: message %v, want it to say which limit opens the topic", pp.ErrorMessage)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "big"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fetched := do[*kmsg.FetchResponse](rc, fetch, 11)
	if code := fetched.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Errorf("fetch from big/0: error code %d, want KAFKA_STORAGE_ERROR", code)
	}

	list := kmsg.NewPtrListOffsetsRequest()
	list.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "big"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)
	listed := do[*kmsg.ListOffsetsResponse](rc, list, 7)
	if code := listed.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Errorf("list offsets of big/0: error code %d, want KAFKA_STORAGE_ERROR", code)
	}
	ns.checkStillNotOpened(t)
}
