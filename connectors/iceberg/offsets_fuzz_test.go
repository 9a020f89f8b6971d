package iceberg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// committedMetadata is a table's metadata with two snapshots, 1 (…004,
// parent given by parent1, when not 0) and 2 (…004, parent given by
// parent2), each with summary property k.
const committedMetadata = `{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://bucket/test/location","last-sequence-number":34,"last-updated-ms":1602638573590,"last-column-id":3,"current-schema-id":1,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","required":true,"type":"long"}]},{"type":"struct","schema-id":1,"identifier-field-ids":[1,2],"fields":[{"id":1,"name":"x","required":true,"type":"long"},{"id":2,"name":"y","required":true,"type":"long","doc":"comment"},{"id":3,"name":"z","required":true,"type":"long"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[{"name":"x","transform":"identity","source-id":1,"field-id":1000}]}],"last-partition-id":1000,"default-sort-order-id":3,"sort-orders":[{"order-id":3,"fields":[{"transform":"identity","source-id":2,"direction":"asc","null-order":"nulls-first"},{"transform":"bucket[4]","source-id":3,"direction":"desc","null-order":"nulls-last"}]}],"properties":{},"current-snapshot-id":3055729675574597004,"snapshots":[{"snapshot-id":3051729675574597004,"timestamp-ms":1515100955770,"sequence-number":0,"summary":{"operation":"append","k":%s},"manifest-list":"s3://a/b/1.avro"%s},{"snapshot-id":3055729675574597004,"parent-snapshot-id":%d,"timestamp-ms":1555100955770,"sequence-number":1,"summary":{"operation":"append","k":%s},"manifest-list":"s3://a/b/2.avro","schema-id":1}],"snapshot-log":[{"snapshot-id":3051729675574597004,"timestamp-ms":1515100955770},{"snapshot-id":3055729675574597004,"timestamp-ms":1555100955770}],"metadata-log":[]}`

// FuzzCommittedOffsets reads the offsets a sink committed from snapshot
// summaries of a table's metadata, as the catalog hands it over: arbitrary
// summary texts and snapshot parents. It never panics or hangs, and finds
// only offsets the summaries hold, also where parents form a cycle
// (iceberg-go accepts such metadata).
func FuzzCommittedOffsets(f *testing.F) {
	const s1, s2 = 3051729675574597004, 3055729675574597004
	f.Add(`{"t":{"0":5}}`, `{"t":{"0":7,"1":2}}`, int64(0), int64(s1))
	f.Add(`{"t":{"x":5,"99999999999":1}}`, `[`, int64(0), int64(s1))
	f.Add(`{"t":{"0":5}}`, `{"t":{"0":7}}`, int64(42), int64(7))
	// A parent cycle: snapshot 1's parent is 2, 2's is 1.
	f.Add(`{"t":{"0":5}}`, `{"t":{"0":7}}`, int64(s2), int64(s1))
	f.Fuzz(func(t *testing.T, sum1, sum2 string, parent1, parent2 int64) {
		q1, _ := json.Marshal(sum1)
		q2, _ := json.Marshal(sum2)
		p1 := ""
		if parent1 != 0 {
			p1 = fmt.Sprintf(`,"parent-snapshot-id":%d`, parent1)
		}
		meta, err := table.ParseMetadataString(fmt.Sprintf(committedMetadata, q1, p1, parent2, q2))
		if err != nil {
			return
		}
		held := map[tp][]int64{}
		for _, sum := range []string{sum1, sum2} {
			var m map[string]map[string]int64
			if json.Unmarshal([]byte(sum), &m) == nil {
				for topic, parts := range m {
					for p, off := range parts {
						if n, err := strconv.ParseInt(p, 10, 32); err == nil {
							held[tp{topic, int32(n)}] = append(held[tp{topic, int32(n)}], off)
						}
					}
				}
			}
		}
		for k, off := range committedOffsets(meta, "k") {
			if !slices.Contains(held[k], off) {
				t.Fatalf("offset %d of %+v is in no summary (%q, %q)", off, k, sum1, sum2)
			}
		}
	})
}
