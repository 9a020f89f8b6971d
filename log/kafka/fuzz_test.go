package kafka

import (
	"context"
	"net"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzHandle feeds arbitrary frames to the request handler: every frame
// gets an answer or an error (which closes the connection), never a panic,
// and nothing waits longer than its context.
func FuzzHandle(f *testing.F) {
	seeds := []kmsg.Request{
		kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrFetchRequest(),
		kmsg.NewPtrListOffsetsRequest(), kmsg.NewPtrJoinGroupRequest(), kmsg.NewPtrOffsetCommitRequest(),
		kmsg.NewPtrCreateTopicsRequest(), kmsg.NewPtrDescribeConfigsRequest(), kmsg.NewPtrOffsetFetchRequest(),
	}
	fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, r := range seeds {
		for _, v := range []int16{0, 4, 9} {
			if v <= r.MaxVersion() {
				r.SetVersion(v)
				f.Add(fr.AppendRequest(nil, r, 1)[4:])
			}
		}
	}
	p := produceReq("fz", testBatch(-1, -1, -1, "a"))
	p.SetVersion(9)
	f.Add(fr.AppendRequest(nil, p, 1)[4:])

	l, err := tlog.Open(tlog.Options{Dir: f.TempDir(), Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	srv, err := Listen(context.Background(), "127.0.0.1:0", l, Options{Logger: quietLogger(), InitialRebalanceDelay: -1})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	f.Fuzz(func(t *testing.T, frame []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		cc := &conn{s: srv, c: a, host: "fuzz", authed: true}
		start := time.Now()
		if rep, err := cc.handle(ctx, frame); err == nil && rep.finish != nil {
			rep.finish()
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("request took %v", d)
		}
	})
}
