package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// selfSigned returns a server config and a client config trusting it.
func selfSigned(t *testing.T) (*tls.Config, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}

func TestTLSAndSASLPlain(t *testing.T) {
	serverTLS, clientTLS := selfSigned(t)
	ts := startServer(t, func(o *Options) {
		o.TLS = serverTLS
		o.SASLPlain = func(user, pass string) bool { return user == "alice" && pass == "s3cret" }
	})
	good := ts.client(t, kgo.DialTLSConfig(clientTLS), kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	if err := good.ProduceSync(t.Context(), &kgo.Record{Topic: "secure", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce with TLS and SASL/PLAIN: %v", err)
	}
	if _, end, err := ts.log.Offsets("secure", 0); err != nil || end != 1 {
		t.Fatalf("log end %d %v", end, err)
	}
	bad := ts.client(t, kgo.DialTLSConfig(clientTLS), kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := bad.Ping(t.Context()); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	noAuth := ts.client(t, kgo.DialTLSConfig(clientTLS), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.RecordDeliveryTimeout(2*time.Second))
	if err := noAuth.ProduceSync(t.Context(), &kgo.Record{Topic: "secure", Value: []byte("y")}).FirstErr(); err == nil {
		t.Fatal("a client without SASL could produce")
	}
}
