package httptrack

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestTmpBoundsAgreeWithOpen(t *testing.T) {
	for _, tc := range []struct{ key, in, out string }{
		{"max.message.bytes", "256B", "255B"}, {"max.message.bytes", "16MiB", "16777217"},
		{"max.batch.bytes", "256", "255"}, {"max.batch.bytes", "256MiB", "268435457"},
		{"max.batch.events", "1", "0"}, {"max.batch.events", "1000000", "1000001"},
		{"dedup.window", "0s", "-1s"},
		{"dedup.max.ids", "1", "0"}, {"dedup.max.ids", "100000000", "100000001"},
		{"rate.limit", "0", "-0.5"},
		{"ack.timeout", "1ms", "999us"},
		{"max.pending.bytes", "1KiB", "1023"}, {"max.pending.bytes", "1TiB", "1099511627777"},
		{"read.batch.events", "1", "0"}, {"read.batch.events", "10000000", "10000001"},
		{"listen", ":0", "localhost"},
	} {
		for _, v := range []string{tc.in, tc.out} {
			vals := spec().WithDefaults(map[string]string{"write.keys": "k", tc.key: v})
			specErr := spec().Validate(vals)
			_, openErr := parseSettings(connect.Config{Values: vals, Spec: spec()})
			if (specErr == nil) != (v == tc.in) || (openErr == nil) != (v == tc.in) {
				t.Errorf("%s=%s: spec %v, open %v", tc.key, v, specErr, openErr)
			}
		}
	}
}
