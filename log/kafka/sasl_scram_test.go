package kafka

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The exchange of RFC 7677 section 3, byte for byte.
func TestScram_RFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := deriveScram(sha256.New, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	x := &scramServer{mechanism: ScramSHA256, h: sha256.New, snonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
		lookup: func(m, u string) (ScramCredential, bool) { return cred, m == ScramSHA256 && u == "user" }}
	first, done, err := x.next([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatalf("client-first: %v %v", err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, done, err := x.next([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatalf("client-final: %v %v", err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	if _, _, err := x.next([]byte("again")); err == nil {
		t.Fatal("a finished exchange took another message")
	}
}

func TestScram_MalformedMessagesFail(t *testing.T) {
	cred, _ := NewScramCredential(ScramSHA256, "pw", 0)
	lookup := func(string, string) (ScramCredential, bool) { return cred, true }
	for _, first := range []string{"", "n", "n,,", "p=tls-unique,,n=u,r=x", "x,,n=u,r=abc", "n,,r=abc,n=u", "n,,n=u=zz,r=abc", "n,a=other,n=u,r=abc", "n,,n=u,r="} {
		x := &scramServer{mechanism: ScramSHA256, h: sha256.New, lookup: lookup}
		if _, _, err := x.next([]byte(first)); err == nil {
			t.Errorf("client-first %q accepted", first)
		}
	}
	for _, final := range []string{"", "c=biws,r=n0nce", "c=eCws,r=abcS,p=AAAA", "c=biws,r=wrong,p=AAAA", "c=biws,r=abcS,p=!!"} {
		x := &scramServer{mechanism: ScramSHA256, h: sha256.New, lookup: lookup, snonce: "S"}
		if _, _, err := x.next([]byte("n,,n=u,r=abc")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := x.next([]byte(final)); err == nil {
			t.Errorf("client-final %q accepted", final)
		}
	}
	if _, err := NewScramCredential(ScramSHA256, "pw", 100); err == nil {
		t.Error("100 iterations accepted")
	}
	if _, err := NewScramCredential("SCRAM-MD5", "pw", 0); err == nil {
		t.Error("an unknown mechanism accepted")
	}
}

// scramUsers serves SCRAM credentials made from user → password, for both
// mechanisms.
func scramUsers(t *testing.T, users map[string]string) func(mechanism, user string) (ScramCredential, bool) {
	t.Helper()
	creds := map[string]ScramCredential{}
	for u, p := range users {
		for _, m := range []string{ScramSHA256, ScramSHA512} {
			c, err := NewScramCredential(m, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			creds[m+"/"+u] = c
		}
	}
	return func(mechanism, user string) (ScramCredential, bool) {
		c, ok := creds[mechanism+"/"+user]
		return c, ok
	}
}

func TestSASLScram_FranzGo(t *testing.T) {
	serverTLS, clientTLS := selfSigned(t)
	ts := startServer(t, func(o *Options) {
		o.TLS = serverTLS
		o.SASLScram = scramUsers(t, map[string]string{"alice": "s3cret", "b,o=b": "pa,ss=word"})
	})
	for _, c := range []struct {
		name string
		mech sasl.Mechanism
		ok   bool
	}{
		{"sha-256", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism(), true},
		{"sha-512", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism(), true},
		{"escaped user name", scram.Auth{User: "b,o=b", Pass: "pa,ss=word"}.AsSha256Mechanism(), true},
		{"wrong password", scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(), false},
		{"unknown user", scram.Auth{User: "mallory", Pass: "s3cret"}.AsSha512Mechanism(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := ts.client(t, kgo.DialTLSConfig(clientTLS), kgo.SASL(c.mech), kgo.AllowAutoTopicCreation(),
				kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.RecordDeliveryTimeout(3*time.Second))
			if !c.ok {
				if err := cl.Ping(t.Context()); err == nil {
					t.Fatal("bad credentials were accepted")
				}
				return
			}
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: "scram", Value: []byte(c.name)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		})
	}
	if _, end, err := ts.log.Offsets("scram", 0); err != nil || end != 3 {
		t.Fatalf("log end %d %v, want the 3 authenticated records", end, err)
	}
	// Big record sets travel over TLS too (fetch answers are written as
	// several buffers; a TLS connection writes them one by one).
	cl := ts.client(t, kgo.DialTLSConfig(clientTLS), kgo.SASL(scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism()),
		kgo.ConsumeTopics("scram"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	big := bytes.Repeat([]byte("x"), 1024)
	var recs []*kgo.Record
	for range 100 {
		recs = append(recs, &kgo.Record{Topic: "scram", Value: big})
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consumeN(t, cl, 103)
	if len(got) != 103 || !bytes.Equal(got[102].Value, big) {
		t.Fatalf("consumed %d records over TLS", len(got))
	}
}

// With a v0 handshake the SCRAM messages travel as bare frames.
func TestSASLScram_HandshakeV0RawFrames(t *testing.T) {
	ts := startServer(t, func(o *Options) { o.SASLScram = scramUsers(t, map[string]string{"alice": "s3cret"}) })
	for _, pass := range []string{"s3cret", "wrong"} {
		rc := ts.raw(t)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = ScramSHA256
		if resp := do[*kmsg.SASLHandshakeResponse](rc, hs, 0); resp.ErrorCode != 0 {
			t.Fatalf("handshake: error %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
		}
		sess, first, err := scram.Auth{User: "alice", Pass: pass}.AsSha256Mechanism().Authenticate(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		tok := first
		authed := false
		for step := 0; step < 3 && !authed; step++ {
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
			if _, err := rc.c.Write(append(frame, tok...)); err != nil {
				t.Fatal(err)
			}
			rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var sz [4]byte
			if _, err := io.ReadFull(rc.c, sz[:]); err != nil {
				if pass == "wrong" {
					break // the listener closed the connection, as Kafka does
				}
				t.Fatalf("step %d: %v", step, err)
			}
			answer := make([]byte, binary.BigEndian.Uint32(sz[:]))
			if _, err := io.ReadFull(rc.c, answer); err != nil {
				t.Fatal(err)
			}
			authed, tok, err = sess.Challenge(answer)
			if err != nil {
				t.Fatalf("step %d: client refused the server's answer %q: %v", step, answer, err)
			}
		}
		if authed != (pass == "s3cret") {
			t.Fatalf("password %q: authenticated %v", pass, authed)
		}
		if authed { // now any request is served
			md := kmsg.NewPtrMetadataRequest()
			if resp := do[*kmsg.MetadataResponse](rc, md, 4); len(resp.Brokers) != 1 {
				t.Fatalf("metadata after authentication: %+v", resp)
			}
		}
	}
}

func TestSASLScram_Kcat(t *testing.T) {
	kcat := needKcat(t)
	ts := startServer(t, func(o *Options) { o.SASLScram = scramUsers(t, map[string]string{"alice": "s3cret"}) })
	if err := ts.log.CreateTopic("kc", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		args := func(pass string, more ...string) []string {
			return append([]string{"-b", ts.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=" + pass}, more...)
		}
		runCmd(t, 15*time.Second, "k:"+mech+"\n", kcat, args("s3cret", "-P", "-t", "kc", "-K:")...)
		out, _ := runCmd(t, 15*time.Second, "", kcat, args("s3cret", "-C", "-t", "kc", "-o", "-1", "-e", "-f", `%s\n`)...)
		if out != mech+"\n" {
			t.Fatalf("%s: kcat -C read %q", mech, out)
		}
		// Record sets big enough to be written from the log's buffers
		// (writev), read by librdkafka.
		big := tlog.Record{Value: bytes.Repeat([]byte("b"), 2048)}
		if _, err := ts.log.Append(t.Context(), "kcbig-"+mech, 0, slices.Repeat([]tlog.Record{big}, 60)); err != nil {
			t.Fatal(err)
		}
		out, _ = runCmd(t, 15*time.Second, "", kcat, args("s3cret", "-C", "-t", "kcbig-"+mech, "-o", "beginning", "-e", "-f", `%S\n`)...)
		if want := strings.Repeat("2048\n", 60); out != want {
			t.Fatalf("%s: kcat read %d lines of the big records, want 60 of 2048 bytes:\n%s", mech, strings.Count(out, "\n"), out)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		cmd := exec.CommandContext(ctx, kcat, args("wrong", "-L", "-m", "1")...)
		b, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(b), "authentication failed") {
			t.Fatalf("%s: kcat with a wrong password: %v\n%q", mech, err, b)
		}
	}
}
