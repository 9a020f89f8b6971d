package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// FuzzStoredRecords feeds arbitrary keys, values and tail headers, as a
// restart reads them back from the offsets and targets topics (which any
// Kafka client may write to), to their decoders. Nothing panics; a key that
// decodes encodes to a key that decodes to the same connector; a tail that
// decodes encodes to one that decodes the same; an unreadable tail is an
// error naming the tail header.
func FuzzStoredRecords(f *testing.F) {
	id := targetID{pipeline: "p", connector: "src"}
	f.Add(offsetKey(id.pipeline, id.connector), []byte(`{"state":"STOPPED","worker_id":"w","ts_ms":5}`), encodeTail([]PartitionOffset{{Topic: "t", Partition: 1, Offset: 9}}))
	f.Add(restartKey(id), []byte(`{"state":"RUNNING"}`), []byte(`[]`))
	f.Add([]byte(`["c",{"pipeline":1}]`), []byte(`{"state":"nope"}`), []byte(`[{"partition":-1,"offset":1e30}]`))
	f.Add([]byte(`["c"]`), []byte(nil), []byte(`null`))
	f.Add([]byte(`[1,{}]`), []byte(`[`), []byte(`{`))
	f.Fuzz(func(t *testing.T, key, value, tail []byte) {
		if got, ok := decodeOffsetKey(key); ok {
			if back, ok := decodeOffsetKey(offsetKey(got.pipeline, got.connector)); !ok || back != got {
				t.Fatalf("key %q reads as %+v, its encoding as %+v, %v", key, got, back, ok)
			}
		}
		if got, restart, ok := decodeKey(connect.Record{Key: key}); ok {
			enc := targetKey(got)
			if restart {
				enc = restartKey(got)
			}
			if back, r2, ok := decodeKey(connect.Record{Key: enc}); !ok || back != got || r2 != restart {
				t.Fatalf("key %q reads as %+v %v, its encoding as %+v %v, %v", key, got, restart, back, r2, ok)
			}
		}
		if _, v, ok := decodeTarget(connect.Record{Key: key, Value: value}); ok && value != nil {
			switch v.State {
			case StateRunning, StatePaused, StateStopped:
			default:
				t.Fatalf("target %q reads as state %q", value, v.State)
			}
		}
		po, err := decodeTail(tail)
		if err != nil {
			if !strings.Contains(err.Error(), "tail header") {
				t.Fatalf("decodeTail(%q): error %q does not name the tail header", tail, err)
			}
			return
		}
		back, err := decodeTail(encodeTail(po))
		if err != nil || (len(po) > 0 || len(back) > 0) && !reflect.DeepEqual(po, back) {
			t.Fatalf("tail %q reads as %+v, its encoding as %+v, %v", tail, po, back, err)
		}
	})
}
