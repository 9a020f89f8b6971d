package kafka

import (
	"fmt"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// appendNumbered appends n records to partition 0 of topic, in batches of
// ten; the record at offset o holds fmt.Sprintf(format, o).
func appendNumbered(t *testing.T, l *tlog.Log, topic, format string, n int) {
	t.Helper()
	for i := 0; i < n; i += 10 {
		recs := make([]tlog.Record, 10)
		for j := range recs {
			recs[j].Value = fmt.Appendf(nil, format, i+j)
		}
		if _, err := l.Append(t.Context(), topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteRecords_Kadm: kadm.DeleteRecords (as kafka-delete-records.sh and
// AdminClient.deleteRecords) moves the log start offset; ListOffsets
// earliest answers it, a consumer from the start begins there, and a fetch
// below it is OFFSET_OUT_OF_RANGE.
func TestDeleteRecords_Kadm(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "d", 1, nil)
	appendNumbered(t, ts.log, "d", "%d", 100)
	adm := kadm.NewClient(ts.client(t))

	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "d", Partition: 0, At: 45})
	rs, err := adm.DeleteRecords(t.Context(), os)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := rs.Lookup("d", 0); !ok || r.Err != nil || r.LowWatermark != 45 {
		t.Fatalf("DeleteRecords(d/0 @45) = %+v, want low watermark 45", r)
	}
	starts, err := adm.ListStartOffsets(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("d", 0); o.Err != nil || o.Offset != 45 {
		t.Fatalf("ListStartOffsets = %+v, want 45", o)
	}

	c := ts.client(t, kgo.ConsumeTopics("d"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := consumeN(t, c, 55)
	if recs[0].Offset != 45 || string(recs[0].Value) != "45" || len(recs) != 55 {
		t.Fatalf("consumed %d records from the start, first at %d (%q); want 55 from 45", len(recs), recs[0].Offset, recs[0].Value)
	}

	rc := ts.raw(t)
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "d"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 44, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	resp := do[*kmsg.FetchResponse](rc, fr, 11)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 45 || p.HighWatermark != 100 {
		t.Fatalf("Fetch @44: %v, log start %d, high watermark %d; want OFFSET_OUT_OF_RANGE, 45, 100", kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset, p.HighWatermark)
	}

	// -1: the high watermark.
	os = kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "d", Partition: 0, At: -1})
	if rs, err = adm.DeleteRecords(t.Context(), os); err != nil {
		t.Fatal(err)
	}
	if r, _ := rs.Lookup("d", 0); r.Err != nil || r.LowWatermark != 100 {
		t.Fatalf("DeleteRecords(d/0 @-1) = %+v, want low watermark 100", r)
	}
}

// TestDeleteRecords_Errors: the answers Kafka gives, in every version.
func TestDeleteRecords_Errors(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "d", 1, nil)
	ts.createTopic(t, "kv", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	ts.createTopic(t, "_tributary.positions", 1, nil)
	appendNumbered(t, ts.log, "d", "%d", 30)
	rc := ts.raw(t)

	av := do[*kmsg.ApiVersionsResponse](rc, kmsg.NewPtrApiVersionsRequest(), 3)
	found := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == 21 {
			found = k.MinVersion == 0 && k.MaxVersion == 2
		}
	}
	if !found {
		t.Fatalf("ApiVersions does not advertise DeleteRecords v0-2: %+v", av.ApiKeys)
	}

	for v := int16(0); v <= 2; v++ {
		for _, tc := range []struct {
			topic  string
			part   int32
			offset int64
			code   int16
			low    int64
		}{
			{"d", 0, 10, 0, 10},
			{"d", 0, 5, 0, 10}, // below the start: nothing changes
			{"d", 0, 31, kerr.OffsetOutOfRange.Code, -1},
			{"d", 0, -7, kerr.OffsetOutOfRange.Code, -1},
			{"d", 3, 1, kerr.UnknownTopicOrPartition.Code, -1},
			{"nope", 0, 1, kerr.UnknownTopicOrPartition.Code, -1},
			{"kv", 0, -1, kerr.PolicyViolation.Code, -1},
			{"_tributary.positions", 0, -1, kerr.InvalidTopicException.Code, -1},
		} {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 5000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Partition, rp.Offset = tc.part, tc.offset
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := do[*kmsg.DeleteRecordsResponse](rc, req, v)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("v%d %s/%d @%d: answer %+v", v, tc.topic, tc.part, tc.offset, resp)
			}
			p := resp.Topics[0].Partitions[0]
			if resp.Topics[0].Topic != tc.topic || p.Partition != tc.part || p.ErrorCode != tc.code || p.LowWatermark != tc.low {
				t.Errorf("v%d %s/%d @%d: %v, low watermark %d; want %v, %d", v, tc.topic, tc.part, tc.offset,
					kerr.ErrorForCode(p.ErrorCode), p.LowWatermark, kerr.ErrorForCode(tc.code), tc.low)
			}
		}
	}
}
