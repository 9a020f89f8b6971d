package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"runtime/metrics"
	"slices"
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
		alloc0 := heapAllocs()
		rep, err := cc.handle(ctx, frame)
		if err == nil && rep.finish != nil {
			rep.out = rep.finish()
		}
		// No length field makes a request cost memory out of proportion
		// to its size (the log's own buffers aside).
		if got := heapAllocs() - alloc0; got > 64*uint64(len(frame))+32<<20 {
			t.Fatalf("a request of %d bytes allocated %d MiB", len(frame), got>>20)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("request took %v", d)
		}
		if err != nil {
			return
		}
		out := rep.out
		if rep.bufs != nil {
			out = bytes.Join(rep.bufs, nil)
		}
		if rep.release != nil {
			rep.release()
		}
		if out == nil {
			return // acks=0
		}
		// A well-formed answer: its size, then the request's correlation id.
		if len(out) < 8 || int(binary.BigEndian.Uint32(out)) != len(out)-4 {
			t.Fatalf("answer of %d bytes with size prefix %x", len(out), out[:min(4, len(out))])
		}
		if h, _, _ := parseHeader(frame); binary.BigEndian.Uint32(out[4:]) != uint32(h.corr) {
			t.Fatalf("answer carries correlation id %d, the request %d", int32(binary.BigEndian.Uint32(out[4:])), h.corr)
		}
	})
}

// heapAllocs returns the bytes allocated on the heap so far (all
// goroutines), without stopping the world.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzConnStream feeds an arbitrary byte stream to a connection of a
// listener that requires SASL (PLAIN or SCRAM), as serveConn reads it:
// size-prefixed frames, bare SASL tokens after a v0 handshake. Every frame
// gets a well-formed answer, no answer (acks=0) or an error that closes the
// connection; nothing panics or waits past its context.
func FuzzConnStream(f *testing.F) {
	fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	frame := func(r kmsg.Request, v int16, corr int32) []byte {
		r.SetVersion(v)
		return fr.AppendRequest(nil, r, corr)
	}
	raw := func(tok string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)
	}
	hs := func(mech string, v int16) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = mech
		return frame(r, v, 1)
	}
	auth := func(tok string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte(tok)
		return frame(r, 1, 2)
	}
	md := frame(kmsg.NewPtrMetadataRequest(), 4, 3)
	f.Add(slices.Concat(frame(kmsg.NewPtrApiVersionsRequest(), 3, 0), hs("PLAIN", 1), auth("\x00alice\x00s3cret"), md))
	f.Add(slices.Concat(hs("PLAIN", 0), raw("\x00alice\x00s3cret"), md))
	f.Add(slices.Concat(hs(ScramSHA256, 1), auth("n,,n=alice,r=abc"), auth("c=biws,r=abcxyz,p=AAAA"), md))
	f.Add(slices.Concat(hs(ScramSHA512, 0), raw("n,,n=alice,r=abc"), raw("c=biws,r=abc,p=AAAA"), md))
	f.Add(slices.Concat(md, hs("GSSAPI", 1)))

	l, err := tlog.Open(tlog.Options{Dir: f.TempDir(), Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	cred, err := NewScramCredential(ScramSHA256, "s3cret", 0)
	if err != nil {
		f.Fatal(err)
	}
	srv, err := Listen(context.Background(), "127.0.0.1:0", l, Options{Logger: quietLogger(), InitialRebalanceDelay: -1,
		SASLPlain: func(u, p string) bool { return u == "alice" && p == "s3cret" },
		SASLScram: func(m, u string) (ScramCredential, bool) { return cred, m == ScramSHA256 && u == "alice" }})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	f.Fuzz(func(t *testing.T, stream []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		cc := &conn{s: srv, c: a, host: "fuzz", authed: !srv.saslRequired()}
		r := bufio.NewReader(bytes.NewReader(stream))
		start := time.Now()
		for {
			frame, err := readFrame(r, 1<<20)
			if err != nil {
				return
			}
			var rep reply
			if cc.rawAuthNext {
				rep.out, err = cc.rawAuth(frame)
			} else {
				rep, err = cc.handle(ctx, frame)
			}
			if err != nil {
				return // the connection closes
			}
			if rep.finish != nil {
				rep.out = rep.finish()
			}
			out := rep.out
			if rep.bufs != nil {
				out = bytes.Join(rep.bufs, nil)
			}
			if out != nil && (len(out) < 4 || int(binary.BigEndian.Uint32(out)) != len(out)-4) {
				t.Fatalf("answer of %d bytes with size prefix %x", len(out), out[:min(4, len(out))])
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("stream took %v", d)
			}
		}
	})
}
