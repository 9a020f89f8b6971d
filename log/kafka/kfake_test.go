package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The listener is checked against a second, independent Kafka
// implementation: franz-go's kfake. One script of requests runs against
// both; every step prints what a client sees (error codes, offsets,
// configs), and the two transcripts must match line by line. Where Kafka
// itself and kfake differ from this listener on purpose (docs/kafka.md,
// "Differences from Apache Kafka"), the script leaves the case out.

// diffStep is one step of the script: it returns the lines it observed.
// A step where kfake is known to answer unlike Apache Kafka carries
// Kafka's answer (want) and the reason; the listener must give that answer.
type diffStep struct {
	name string
	run  func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) []string
	want []string
	why  string
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	for e := err; e != nil; {
		if k, ok := e.(*kerr.Error); ok {
			ke = k
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	if ke != nil {
		return ke.Message
	}
	return "error: " + err.Error()
}

func codeName(code int16) string { return errName(kerr.ErrorForCode(code)) }

func configLine(adm *kadm.Client, ctx context.Context, topic string, keys ...string) []string {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return []string{"describe: " + errName(err)}
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return []string{"describe: " + errName(err)}
	}
	if rc.Err != nil {
		return []string{"describe: " + errName(rc.Err)}
	}
	var out []string
	for _, k := range keys {
		found := false
		for _, c := range rc.Configs {
			if c.Key == k {
				found = true
				out = append(out, fmt.Sprintf("%s=%s (%s)", k, c.MaybeValue(), c.Source))
			}
		}
		if !found {
			out = append(out, k+" missing")
		}
	}
	return out
}

func diffScript() []diffStep {
	str := kmsg.StringPtr
	return []diffStep{
		{"create topic", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": str("3600000")}, "t")
			return []string{errName(err), errName(r.Err), fmt.Sprint(r.NumPartitions, r.ReplicationFactor)}
		}, nil, ""},
		{"create it again", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, _ := adm.CreateTopic(ctx, 3, 1, nil, "t")
			return []string{errName(r.Err)}
		}, nil, ""},
		{"create a bad name", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, _ := adm.CreateTopic(ctx, 1, 1, nil, "bad name!")
			return []string{errName(r.Err)}
		}, []string{"INVALID_TOPIC_EXCEPTION"}, "kfake accepts any topic name; Kafka allows [a-zA-Z0-9._-] only"},
		{"create with an unknown config", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, _ := adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": str("1")}, "u")
			return []string{errName(r.Err)}
		}, []string{"INVALID_CONFIG"}, "kfake accepts unknown topic configs; Kafka refuses them (Unknown topic config name)"},
		{"metadata", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			req := kmsg.NewPtrMetadataRequest()
			for _, n := range []string{"t", "nope"} {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = str(n)
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return []string{errName(err)}
			}
			var out []string
			for _, t := range resp.Topics {
				out = append(out, fmt.Sprintf("%s %s partitions=%d internal=%v", *t.Topic, codeName(t.ErrorCode), len(t.Partitions), t.IsInternal))
			}
			sort.Strings(out)
			return out
		}, nil, ""},
		{"create partitions", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.UpdatePartitions(ctx, 5, "t")
			out := []string{errName(err)}
			if err == nil {
				out = append(out, errName(r["t"].Err))
			}
			r, err = adm.UpdatePartitions(ctx, 2, "t")
			out = append(out, errName(err))
			if err == nil {
				out = append(out, errName(r["t"].Err))
			}
			r, err = adm.UpdatePartitions(ctx, 2, "nope")
			if err == nil {
				out = append(out, errName(r["nope"].Err))
			}
			return out
		}, nil, ""},
		{"produce with timestamps", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			var out []string
			for i := range 10 {
				r := &kgo.Record{Topic: "t", Partition: 0, Value: fmt.Appendf(nil, "v%d", i), Timestamp: time.UnixMilli(int64(1000 * (i + 1)))}
				res := cl.ProduceSync(ctx, r)
				out = append(out, fmt.Sprintf("%d %s", r.Offset, errName(res.FirstErr())))
			}
			return out
		}, nil, ""},
		{"idempotent producer: duplicate and gap", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			ip := kmsg.NewPtrInitProducerIDRequest()
			ip.TransactionTimeoutMillis = 60000
			ipr, err := ip.RequestWith(ctx, cl)
			if err != nil || ipr.ErrorCode != 0 {
				return []string{"init producer id: " + errName(err) + " " + codeName(ipr.ErrorCode)}
			}
			out := []string{"init producer id ok"}
			for _, b := range []struct {
				seq  int32
				vals []string
			}{{0, []string{"a", "b"}}, {0, []string{"a", "b"}}, {2, []string{"c"}}, {7, []string{"x"}}, {1, []string{"b"}}} {
				req := produceReq("t", testBatch(ipr.ProducerID, ipr.ProducerEpoch, b.seq, b.vals...))
				req.Topics[0].Partitions[0].Partition = 1
				req.Topics[0].TopicID = topicIDOf(ctx, cl, "t") // Produce v13 names topics by id
				resp, err := req.RequestWith(ctx, cl)
				if err != nil {
					out = append(out, errName(err))
					continue
				}
				rp := resp.Topics[0].Partitions[0]
				if rp.ErrorCode != 0 {
					out = append(out, fmt.Sprintf("seq %d: %s", b.seq, codeName(rp.ErrorCode)))
					continue
				}
				out = append(out, fmt.Sprintf("seq %d: base offset %d", b.seq, rp.BaseOffset))
			}
			return out
		}, nil, ""},
		{"list offsets", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			var out []string
			s, err := adm.ListStartOffsets(ctx, "t")
			if err != nil {
				return []string{errName(err)}
			}
			e, err := adm.ListEndOffsets(ctx, "t")
			if err != nil {
				return []string{errName(err)}
			}
			for p := int32(0); p < 5; p++ {
				so, _ := s.Lookup("t", p)
				eo, _ := e.Lookup("t", p)
				out = append(out, fmt.Sprintf("p%d [%d, %d)", p, so.Offset, eo.Offset))
			}
			for _, ms := range []int64{0, 5000, 5500, 10000, 20000} {
				o, err := adm.ListOffsetsAfterMilli(ctx, ms, "t")
				if err != nil {
					out = append(out, errName(err))
					continue
				}
				lo, _ := o.Lookup("t", 0)
				out = append(out, fmt.Sprintf("after %d: offset %d ts %d %s", ms, lo.Offset, lo.Timestamp, errName(lo.Err)))
			}
			return out
		}, nil, ""},
		{"list offsets: max timestamp (-3)", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			for p := int32(0); p < 5; p++ {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -3, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return []string{errName(err)}
			}
			var out []string
			for _, p := range resp.Topics[0].Partitions {
				if p.Partition == 1 && p.Offset >= 0 && p.Timestamp > 0 {
					// Batches stamped now: which is newest depends on the clock.
					out = append(out, fmt.Sprintf("p%d %s a record stamped now", p.Partition, codeName(p.ErrorCode)))
					continue
				}
				out = append(out, fmt.Sprintf("p%d %s offset %d ts %d", p.Partition, codeName(p.ErrorCode), p.Offset, p.Timestamp))
			}
			return out
		}, nil, ""},
		{"list offsets of an unknown partition", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 99, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return []string{errName(err)}
			}
			return []string{codeName(resp.Topics[0].Partitions[0].ErrorCode)}
		}, nil, ""},
		{"fetch out of range and unknown partition", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 10, 1<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", topicIDOf(ctx, cl, "t") // by name up to v12, by id from v13
			for _, pp := range []struct {
				p   int32
				off int64
			}{{0, 100}, {0, 10}, {0, 3}, {99, 0}} {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = pp.p, pp.off, 1<<20, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return []string{errName(err)}
			}
			var out []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					n := 0
					if len(p.RecordBatches) > 0 {
						fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: t.Topic, Partition: p.Partition, KeepControlRecords: true, Offset: 3}, &p, kgo.DefaultDecompressor(), nil)
						n = len(fp.Records)
						if n > 0 {
							out = append(out, fmt.Sprintf("first record offset %d value %s", fp.Records[0].Offset, fp.Records[0].Value))
						}
					}
					if p.ErrorCode != 0 {
						out = append(out, fmt.Sprintf("p%d %s", p.Partition, codeName(p.ErrorCode)))
						continue
					}
					out = append(out, fmt.Sprintf("p%d hw=%d records=%d", p.Partition, p.HighWatermark, n))
				}
			}
			return out
		}, nil, ""},
		{"describe configs", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			return configLine(adm, ctx, "t", "retention.ms", "cleanup.policy")
		}, nil, ""},
		{"incremental alter configs", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.SetConfig, Name: "retention.ms", Value: str("7200000")},
				{Op: kadm.SetConfig, Name: "cleanup.policy", Value: str("compact")},
			}, "t")
			out := []string{errName(err)}
			for _, x := range r {
				out = append(out, x.Name+" "+errName(x.Err))
			}
			out = append(out, configLine(adm, ctx, "t", "retention.ms", "cleanup.policy")...)
			r, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "t")
			for _, x := range r {
				out = append(out, x.Name+" "+errName(x.Err))
			}
			out = append(out, configLine(adm, ctx, "t", "retention.ms", "cleanup.policy")...)
			return out
		}, nil, ""},
		{"incremental alter of an unknown config", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: str("1")}}, "t")
			out := []string{errName(err)}
			for _, x := range r {
				out = append(out, x.Name+" "+errName(x.Err))
			}
			return out
		}, []string{"ok", "t INVALID_CONFIG"}, "kfake accepts unknown topic configs; Kafka refuses them"},
		{"alter (replace) configs", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: str("60000")}}, "t")
			out := []string{errName(err)}
			for _, x := range r {
				out = append(out, x.Name+" "+errName(x.Err))
			}
			return append(out, configLine(adm, ctx, "t", "retention.ms", "cleanup.policy")...)
		}, nil, ""},
		{"group offsets from outside the group", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			os := kadm.Offsets{}
			os.Add(kadm.Offset{Topic: "t", Partition: 0, At: 3, LeaderEpoch: -1})
			os.Add(kadm.Offset{Topic: "t", Partition: 1, At: 0, LeaderEpoch: -1})
			c, err := adm.CommitOffsets(ctx, "g", os)
			out := []string{errName(err)}
			if err == nil {
				out = append(out, errName(c.Error()))
			}
			f, err := adm.FetchOffsets(ctx, "g")
			out = append(out, errName(err))
			var lines []string
			f.Each(func(o kadm.OffsetResponse) {
				lines = append(lines, fmt.Sprintf("%s/%d at %d %s", o.Topic, o.Partition, o.At, errName(o.Err)))
			})
			sort.Strings(lines)
			out = append(out, lines...)
			return out
		}, nil, ""},
		{"offsets of an unknown group", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			f, err := adm.FetchOffsets(ctx, "no-such-group")
			return []string{fmt.Sprintf("%s, %d offsets", errName(err), len(f))}
		}, []string{"ok, 0 offsets"}, "kfake answers GROUP_ID_NOT_FOUND; Kafka answers an empty list (OffsetMetadataManager.fetchAllOffsets)"},
		{"describe and list groups", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			d, err := adm.DescribeGroups(ctx, "g")
			out := []string{errName(err), fmt.Sprintf("state %q members %d %s", d["g"].State, len(d["g"].Members), errName(d["g"].Err))}
			l, err := adm.ListGroups(ctx)
			return append(out, errName(err), fmt.Sprint("listed: ", l.Groups()))
		}, nil, ""},
		{"describe an unknown group", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			d, err := adm.DescribeGroups(ctx, "no-such-group")
			return []string{errName(err), fmt.Sprintf("state %q members %d %s", d["no-such-group"].State, len(d["no-such-group"].Members), errName(d["no-such-group"].Err))}
		}, []string{"ok", `state "Dead" members 0 ok`}, "kfake adds GROUP_ID_NOT_FOUND; Kafka answers state Dead without an error"},
		{"group requests from unknown members", func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) []string {
			var out []string
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID = "g", 1, "ghost"
			if r, err := hb.RequestWith(ctx, cl); err == nil {
				out = append(out, "heartbeat "+codeName(r.ErrorCode))
			}
			sg := kmsg.NewPtrSyncGroupRequest()
			sg.Group, sg.Generation, sg.MemberID = "g", 1, "ghost"
			if r, err := sg.RequestWith(ctx, cl); err == nil {
				out = append(out, "sync "+codeName(r.ErrorCode))
			}
			oc := kmsg.NewPtrOffsetCommitRequest()
			oc.Group, oc.Generation, oc.MemberID = "g", 1, "ghost"
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic, ot.TopicID = "t", topicIDOf(ctx, cl, "t")
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset = 0, 1
			ot.Partitions = append(ot.Partitions, op)
			oc.Topics = append(oc.Topics, ot)
			if r, err := oc.RequestWith(ctx, cl); err == nil {
				out = append(out, "commit "+codeName(r.Topics[0].Partitions[0].ErrorCode))
			}
			jg := kmsg.NewPtrJoinGroupRequest()
			jg.Group, jg.MemberID, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g", "", "consumer", 10, 1000
			jp := kmsg.NewJoinGroupRequestProtocol()
			jp.Name = "range"
			jg.Protocols = append(jg.Protocols, jp)
			if r, err := jg.RequestWith(ctx, cl); err == nil {
				out = append(out, "join with a 10 ms session "+codeName(r.ErrorCode))
			}
			return out
		}, nil, ""},
		{"group protocol: two members, rebalances, generations", groupScript, nil, ""},
		{"group: commit from outside once the only member left, one pending", pendingScript, nil, ""},
		{"group: a pending member id outlives a rebalance", pendingRejoinScript, nil, ""},
		{"group: the state of groups without members", emptyGroupScript, nil, ""},
		{"group: static members (group.instance.id)", staticMemberScript, nil, ""},
		{"group: describe in each state, a follower rejoining", describeRejoinScript, nil, ""},
		{"group: offset delete without offsets", offsetDeleteScript, nil, ""},
		{"group: a member that never syncs is removed", pendingSyncScript, []string{
			"A sync: ok assignment \"a\"",
			"A heartbeat while B joins: REBALANCE_IN_PROGRESS",
			"A rejoin: ok generation 2, members 2",
			"B join: ok generation 2",
			"A sync: ok assignment \"a\"",
			"A heartbeat after the rebalance timeout: REBALANCE_IN_PROGRESS",
			"A rejoin: ok generation 3, members 1",
			"B heartbeat: UNKNOWN_MEMBER_ID",
		}, "kfake forgets the members pending sync when the leader syncs; Kafka keeps them in Stable until they sync or the rebalance timeout passes (onExpirePendingSync: CompletingRebalance | Stable)"},
		{"group: static members that do not rejoin stay", staticKeptScript, []string{
			"S1 join: ok generation 1",
			"S1 sync: ok assignment \"1\"",
			"S1 heartbeat while S2 joins: REBALANCE_IN_PROGRESS",
			"S1 rejoin: ok generation 2, members 2",
			"S2 join: ok generation 2",
			"S1 sync: ok assignment \"1\"",
			"S2 sync: ok assignment \"2\"",
			"S1 rejoin alone: ok generation 3, members 2",
			"S1 sync: ok assignment \"1\"",
			"S2 heartbeat of the old generation: ILLEGAL_GENERATION",
			"S2 rejoin: ok generation 3",
			"S2 sync: ok assignment \"2b\"",
			"S1 heartbeat: ok",
			"describe: Stable protocol type \"consumer\" protocol \"range\" members [(metadata 6 bytes, assignment \"1\") (metadata 6 bytes, assignment \"2b\")]",
		}, "kfake removes every member that did not rejoin; Kafka removes only dynamic ones (onCompleteJoin: notYetRejoinedDynamicMembers)"},
		{"delete group offsets", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.DeleteOffsets(ctx, "g", kadm.TopicsSet{"t": {0: {}}})
			out := []string{errName(err), errName(r.Error())}
			f, _ := adm.FetchOffsets(ctx, "g")
			f.Each(func(o kadm.OffsetResponse) {
				out = append(out, fmt.Sprintf("%s/%d at %d", o.Topic, o.Partition, o.At))
			})
			return out
		}, nil, ""},
		{"delete groups", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.DeleteGroup(ctx, "g")
			out := []string{errName(err), errName(r.Err)}
			r, _ = adm.DeleteGroup(ctx, "g")
			return append(out, errName(r.Err))
		}, nil, ""},
		{"delete topics", func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) []string {
			r, err := adm.DeleteTopic(ctx, "t")
			out := []string{errName(err), errName(r.Err)}
			r, _ = adm.DeleteTopic(ctx, "t")
			out = append(out, errName(r.Err))
			td, err := adm.ListTopics(ctx)
			return append(out, errName(err), fmt.Sprint("t listed: ", td.Has("t")))
		}, nil, ""},
	}
}

func topicIDOf(ctx context.Context, cl *kgo.Client, topic string) [16]byte {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return [16]byte{}
	}
	return td[topic].ID
}

// runScript runs the script on a cluster and returns each step's lines.
func runScript(t *testing.T, addrs []string) [][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MetadataMinAge(10*time.Millisecond), kgo.RequestRetries(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var out [][]string
	for _, s := range diffScript() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		out = append(out, s.run(ctx, cl, adm))
		cancel()
	}
	return out
}

func TestListener_MatchesKfake(t *testing.T) {
	ts := startServer(t)
	ours := runScript(t, []string{ts.addr})

	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	theirs := runScript(t, kf.ListenAddrs())

	for i, s := range diffScript() {
		o, k := strings.Join(ours[i], "\n  "), strings.Join(theirs[i], "\n  ")
		switch {
		case s.want != nil:
			w := strings.Join(s.want, "\n  ")
			if o != w {
				t.Errorf("%s: the listener answers\n  %s\nwant (as Apache Kafka; %s)\n  %s", s.name, o, s.why, w)
			}
			if k == w {
				t.Logf("%s: kfake now answers as Kafka; the step can be compared again", s.name)
			}
		case o != k:
			t.Errorf("%s: the listener answers\n  %s\nkfake answers\n  %s", s.name, o, k)
		}
	}
}

// groupScript walks the classic group protocol with two members by hand:
// join with the member id round trip, sync, a second member joining (the
// first is told to rejoin), commits of an old and the current generation,
// a leave and the rebalance it causes.
func groupScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	seeds, _ := a.OptValue(kgo.SeedBrokers).([]string)
	b, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(0))
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	const group = "gp"
	join := func(cl *kgo.Client, member string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 3000
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, jp)
		return req.RequestWith(ctx, cl)
	}
	// A member's join: the member id round trip (KIP-394), then the join.
	fullJoin := func(cl *kgo.Client, name string) (string, *kmsg.JoinGroupResponse) {
		r, err := join(cl, "")
		if err != nil {
			say("%s join: %s", name, errName(err))
			return "", nil
		}
		say("%s first join: %s", name, codeName(r.ErrorCode))
		id := r.MemberID
		r, err = join(cl, id)
		if err != nil {
			say("%s join: %s", name, errName(err))
			return id, nil
		}
		return id, r
	}
	sync := func(cl *kgo.Client, member string, gen int32, assign map[string]string) (*kmsg.SyncGroupResponse, error) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation, req.ProtocolType, req.Protocol = group, member, gen, kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		for m, a := range assign {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, []byte(a)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		return req.RequestWith(ctx, cl)
	}
	heartbeat := func(cl *kgo.Client, member string, gen int32) string {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			return errName(err)
		}
		return codeName(r.ErrorCode)
	}
	commit := func(cl *kgo.Client, member string, gen int32) string {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "t", topicIDOf(ctx, cl, "t")
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			return errName(err)
		}
		return codeName(r.Topics[0].Partitions[0].ErrorCode)
	}

	aID, r := fullJoin(a, "A")
	if r == nil {
		return out
	}
	say("A join: %s generation %d, leads %v, members %d", codeName(r.ErrorCode), r.Generation, r.LeaderID == aID, len(r.Members))
	if s, err := sync(a, aID, r.Generation, map[string]string{aID: "a-all"}); err == nil {
		say("A sync: %s assignment %q", codeName(s.ErrorCode), s.MemberAssignment)
	}
	say("A heartbeat: %s", heartbeat(a, aID, 1))
	say("commit from outside while Stable: %s", commit(a, "", -1))

	// B joins: its join waits until A rejoined.
	type joined struct {
		id string
		r  *kmsg.JoinGroupResponse
	}
	bDone := make(chan joined, 1)
	var bFirst []string
	go func() {
		r, err := join(b, "")
		if err != nil {
			bDone <- joined{}
			return
		}
		bFirst = append(bFirst, "B first join: "+codeName(r.ErrorCode))
		id := r.MemberID
		r, _ = join(b, id)
		bDone <- joined{id, r}
	}()
	hb := ""
	for range 100 {
		if hb = heartbeat(a, aID, 1); hb != "ok" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	say("A heartbeat while B joins: %s", hb)
	say("commit from outside while B joins: %s", commit(a, "", -1))
	r, err = join(a, aID)
	if err != nil {
		say("A rejoin: %s", errName(err))
		return out
	}
	bj := <-bDone
	out = append(out, bFirst...)
	if bj.r == nil {
		say("B join failed")
		return out
	}
	say("A rejoin: %s generation %d, leads %v, members %d", codeName(r.ErrorCode), r.Generation, r.LeaderID == aID, len(r.Members))
	say("B join: %s generation %d, leads %v, members %d", codeName(bj.r.ErrorCode), bj.r.Generation, bj.r.LeaderID == bj.id, len(bj.r.Members))
	gen := r.Generation
	say("commit from outside before the syncs: %s", commit(a, "", -1))
	bSync := make(chan string, 1)
	go func() {
		s, err := sync(b, bj.id, gen, nil)
		if err != nil {
			bSync <- errName(err)
			return
		}
		bSync <- fmt.Sprintf("%s assignment %q", codeName(s.ErrorCode), s.MemberAssignment)
	}()
	if s, err := sync(a, aID, gen, map[string]string{aID: "a-half", bj.id: "b-half"}); err == nil {
		say("A sync: %s assignment %q", codeName(s.ErrorCode), s.MemberAssignment)
	}
	say("B sync: %s", <-bSync)
	say("A commit of generation %d: %s", gen-1, commit(a, aID, gen-1))
	say("A commit of generation %d: %s", gen, commit(a, aID, gen))
	say("B heartbeat: %s", heartbeat(b, bj.id, gen))

	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = group, aID
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = aID
	lr.Members = append(lr.Members, lm)
	if l, err := lr.RequestWith(ctx, a); err == nil {
		say("A leaves: %s", codeName(l.ErrorCode))
	}
	for range 100 {
		if hb = heartbeat(b, bj.id, gen); hb != "ok" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	say("B heartbeat after A left: %s", hb)
	if r, err := join(b, bj.id); err == nil {
		say("B rejoin: %s generation %d, leads %v, members %d", codeName(r.ErrorCode), r.Generation, r.LeaderID == bj.id, len(r.Members))
		if s, err := sync(b, bj.id, r.Generation, map[string]string{bj.id: "b-all"}); err == nil {
			say("B sync: %s assignment %q", codeName(s.ErrorCode), s.MemberAssignment)
		}
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if d, err := dg.RequestWith(ctx, a); err == nil && len(d.Groups) == 1 {
		g := d.Groups[0]
		say("describe: %s state %s protocol %s/%s members %d", codeName(g.ErrorCode), g.State, g.ProtocolType, g.Protocol, len(g.Members))
	}
	return out
}

// pendingScript: A joins group "gq" and syncs; B gets its member id
// (KIP-394) but does not join yet; A leaves. The rebalance A's leave
// starts has no member, so its timeout is 0 and it ends at once (Kafka's
// DelayedJoin of the largest rebalance timeout of no members): the group
// is Empty and takes commits from outside, with or without a member id.
func pendingScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	const group = "gq"
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	join := func(member string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 3000
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, jp)
		return req.RequestWith(ctx, a)
	}
	commit := func(member string) string {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "t", topicIDOf(ctx, a, "t")
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, a)
		if err != nil {
			return errName(err)
		}
		return codeName(r.Topics[0].Partitions[0].ErrorCode)
	}
	r, err := join("")
	if err != nil {
		return []string{errName(err)}
	}
	aID := r.MemberID
	if r, err = join(aID); err != nil {
		return []string{errName(err)}
	}
	say("A join: %s", codeName(r.ErrorCode))
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation = group, aID, r.Generation
	sreq.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: aID}}
	if _, err := sreq.RequestWith(ctx, a); err != nil {
		return append(out, errName(err))
	}
	if r, err = join(""); err != nil {
		return append(out, errName(err))
	}
	say("B first join: %s", codeName(r.ErrorCode))
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = group, aID
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: aID}}
	if l, err := lr.RequestWith(ctx, a); err == nil {
		say("A leaves: %s", codeName(l.ErrorCode))
	}
	say("commit from outside: %s", commit(""))
	say("commit of generation -1 with a member id: %s", commit(aID))
	return out
}
