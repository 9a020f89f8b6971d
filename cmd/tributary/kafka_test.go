package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// TestRun_KafkaListenerAndBackend runs worker A on the embedded log with
// log.kafka.listen, reads its topic with franz-go, then runs worker B with
// backend: kafka against A's listener: B's pipeline moves events through
// A's log into B's file.
func TestRun_KafkaListenerAndBackend(t *testing.T) {
	testListenerAndBackend(t, "", "", nil)
}

// TestRun_KafkaTLSAndSCRAM is the same with the listener on TLS requiring
// SASL (SCRAM-SHA-256 and PLAIN), and worker B's kafka backend verifying
// the listener's certificate and logging in with SCRAM.
func TestRun_KafkaTLSAndSCRAM(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	t.Setenv("WORKER_PW", "pw-of-the-worker")
	listener := fmt.Sprintf(", tls: {cert: %s, key: %s}, sasl: {mechanisms: [SCRAM-SHA-256, PLAIN], users: {worker: \"${WORKER_PW}\"}}", cert, key)
	backend := fmt.Sprintf(", tls: {ca: %s}, sasl: {mechanism: SCRAM-SHA-256, username: worker, password: \"${WORKER_PW}\"}", ca)
	pool := certPoolOf(t, ca)
	refused := func(addr string) {
		// A wrong password, and a client without TLS, get nothing.
		for what, opts := range map[string][]kgo.Opt{
			"wrong password": {kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.SASL(scram.Auth{User: "worker", Pass: "nope"}.AsSha256Mechanism())},
			"no TLS":         {kgo.SASL(plain.Auth{User: "worker", Pass: "pw-of-the-worker"}.AsMechanism())},
		} {
			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			err = cl.Ping(ctx)
			cancel()
			cl.Close()
			if err == nil {
				t.Errorf("%s: the listener let the client in", what)
			}
		}
		// PLAIN over TLS is accepted too.
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.SASL(plain.Auth{User: "worker", Pass: "pw-of-the-worker"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); err != nil {
			t.Errorf("PLAIN over TLS: %v", err)
		}
	}
	testListenerAndBackend(t, listener, backend, refused,
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool}),
		kgo.SASL(scram.Auth{User: "worker", Pass: "pw-of-the-worker"}.AsSha256Mechanism()))
}

// testListenerAndBackend runs the scenario of TestRun_KafkaListenerAndBackend
// with extra flow-mapping entries for worker A's and worker B's log.kafka,
// and franz-go options for the direct client.
func testListenerAndBackend(t *testing.T, listenerExtra, backendExtra string, whileA func(addr string), clientOpts ...kgo.Opt) {
	dir := t.TempDir()
	kafkaAddr, restA, restB := freeAddr(t), freeAddr(t), freeAddr(t)
	pipeA := filepath.Join(dir, "a.yaml")
	writeFile(t, pipeA, `version: 1
name: a
log:
  dir: `+filepath.Join(dir, "data")+`
  kafka: {listen: `+kafkaAddr+listenerExtra+`}
sources:
  - name: gen-a
    connector: generator
    topic: web.tracking
    config: {rate: 2000, max.events: 100}
`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	doneA := make(chan error, 1)
	go func() {
		doneA <- run(ctx, []string{"run", pipeA, "--rest-addr", restA}, strings.NewReader(""), new(syncbuf.Buffer), new(syncbuf.Buffer))
	}()

	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics("web.tracking"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, clientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := 0
	deadline := time.Now().Add(20 * time.Second)
	for seen < 100 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			if strings.Contains(string(r.Value), `"seq"`) {
				seen++
			}
		})
	}
	if seen < 100 {
		t.Fatalf("franz-go read %d generated events through the listener, want 100", seen)
	}
	if whileA != nil {
		whileA(kafkaAddr)
	}

	pipeB := filepath.Join(dir, "b.yaml")
	out := filepath.Join(dir, "b.jsonl")
	writeFile(t, pipeB, `version: 1
name: b
log:
  backend: kafka
  kafka: {brokers: [`+kafkaAddr+`]`+backendExtra+`}
sources:
  - name: gen-b
    connector: generator
    topic: b.events
    config: {rate: 2000, max.events: 50}
sinks:
  - name: file-b
    connector: file
    topics: [b.events]
    config: {path: `+out+`}
`)
	ctxB, cancelB := context.WithCancel(ctx)
	doneB := make(chan error, 1)
	go func() {
		doneB <- run(ctxB, []string{"run", pipeB, "--rest-addr", restB}, strings.NewReader(""), new(syncbuf.Buffer), new(syncbuf.Buffer))
	}()
	deadline = time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Count(string(data), "\n") >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker B on the kafka backend delivered %d of 50 events", strings.Count(string(data), "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Fatalf("worker B: %v", err)
	}
	cancel()
	if err := <-doneA; err != nil {
		t.Fatalf("worker A: %v", err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTestCerts writes a CA and a certificate for 127.0.0.1 signed by it
// into dir, as PEM files.
func writeTestCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	writeFile(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	writeFile(t, cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})))
	writeFile(t, key, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return ca, cert, key
}

func certPoolOf(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool, err := certPool(path)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}
