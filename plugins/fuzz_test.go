package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
	"google.golang.org/protobuf/proto"
)

// FuzzPluginMessages decodes arbitrary bytes as the answers a plugin
// process sends (a Read's records and error, a Describe's spec) and
// converts them as the host does. Nothing panics; records convert back to
// the same wire records; an error keeps the plugin's message; a described
// connector that registers validates configurations without panicking.
func FuzzPluginMessages(f *testing.F) {
	ts := time.Unix(1_700_000_000, 5)
	for _, m := range []proto.Message{
		&pluginpb.ReadResponse{Records: toPBRecords([]connect.Record{
			{Topic: "t", Key: []byte("k"), Value: []byte(`{"a":1}`), Position: connect.Position(`{"seq":1}`), Timestamp: ts,
				Headers: []connect.Header{{Key: "h", Value: []byte("v")}, {Key: "nil"}}},
			{Topic: "t", Value: nil, Position: connect.Position{}},
		})},
		&pluginpb.ReadResponse{Error: toPBError(connect.BadRecordAt(3, errors.New("bad")))},
		&pluginpb.ReadResponse{Error: toPBError(connect.RetryAfter(time.Second, connect.WithAttempts(2, errors.New("later"))))},
		&pluginpb.ReadResponse{Error: &pluginpb.Error{Message: "m", Kind: 99, Index: -5, Attempts: 1 << 40, RetryAfterNs: -1}},
		&pluginpb.DescribeResponse{Name: "p", Kind: "source", Version: "1.0.0", Params: toPBParams(connect.Spec{Params: []connect.Param{
			{Name: "n", Type: connect.TypeInt, Min: "1", Max: "10", Default: "5"},
			{Name: "a", Type: connect.TypeString, Format: connect.FormatHostPort},
			{Name: "l", Type: connect.TypeList, Enum: []string{"x", "y"}, Exclusive: true},
		}})},
		&pluginpb.DescribeResponse{Name: "p", Kind: "sink", Params: []*pluginpb.Param{{Name: "x", Type: "int", Min: "z"}, {Name: "y", Format: "future"}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rr pluginpb.ReadResponse
		if proto.Unmarshal(data, &rr) == nil {
			recs := fromPBRecords(rr.Records)
			back := fromPBRecords(toPBRecords(recs))
			if !reflect.DeepEqual(recs, back) {
				t.Fatalf("records change through the wire:\n%+v\n%+v", recs, back)
			}
			if err := fromPBError(rr.Error); (err == nil) != (rr.Error == nil) || err != nil && err.Error() != rr.Error.Message {
				t.Fatalf("error %+v converts to %v", rr.Error, err)
			}
		}
		var d pluginpb.DescribeResponse
		if proto.Unmarshal(data, &d) == nil {
			spec, _ := fromPBParams(d.Params)
			p := &Plugin{Name: d.Name, Kind: connect.Kind(d.Kind), Version: d.Version, Spec: spec}
			if connect.NewRegistry().Register(p.Connector()) == nil {
				cfg := map[string]string{}
				for _, prm := range spec.Params {
					cfg[prm.Name] = prm.Default
				}
				_ = spec.Validate(cfg)
				_ = spec.WithDefaults(cfg)
				_ = spec.Mask(cfg)
			}
		}
	})
}

// FuzzReadLockFile reads arbitrary bytes as a plugin directory's lock
// file. It never panics; an error names the file; a file it reads pins
// exactly the files whose well-formed lines it holds.
func FuzzReadLockFile(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	for _, s := range []string{"", sum + "  counter\n", sum + " *jsonl\n# c\n\n" + strings.Repeat("01", 32) + "  a/b\n",
		sum + "  x\n" + sum + "  x\n", "zz  x\n", sum + "\n", sum + "  \n", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, LockFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		pins, err := readLockFile(dir)
		if err != nil {
			if !strings.Contains(err.Error(), LockFile) {
				t.Fatalf("error %q does not name the lock file", err)
			}
			return
		}
		lines := 0
		for _, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines++
			}
		}
		if len(pins) != lines {
			t.Fatalf("%d pins from a lock file of %d pin lines: %q", len(pins), lines, data)
		}
	})
}
