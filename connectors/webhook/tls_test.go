package webhook

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// newTLSReceiver starts an https server whose certificate for 127.0.0.1
// is signed by a CA made for the test, and returns it with the CA's PEM
// file.
func newTLSReceiver(t *testing.T, handler http.Handler) (*httptest.Server, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the test fails on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPath := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caPath
}

func TestTLS_CAFile(t *testing.T) {
	rc := &receiver{}
	srv, caPath := newTLSReceiver(t, rc)
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("server URL %s", srv.URL)
	}
	s := open(t, fast(map[string]string{"url": srv.URL + "/hook", "tls.ca": caPath}))
	if err := s.Write(t.Context(), events([]string{"a", "b"}, 2)); err != nil {
		t.Fatal(err)
	}
	if n := len(rc.requests()); n != 4 {
		t.Errorf("%d requests over TLS, want 4", n)
	}

	// With the system roots the CA is unknown: no retry can help, the
	// task fails with a hint.
	s2 := open(t, fast(map[string]string{"url": srv.URL + "/hook"}))
	err := s2.Write(t.Context(), events([]string{"a"}, 1))
	if err == nil || connect.IsBadRecord(err) || connect.IsRetryable(err) || !strings.Contains(err.Error(), "set tls.ca") {
		t.Errorf("Write without the CA = %v, want a plain error with the tls.ca hint", err)
	}
}

func TestTLS_NotPEM(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(path, []byte("not a certificate"), 0o600)
	s := &Sink{}
	err := s.Open(t.Context(), connect.Config{Values: map[string]string{"url": "https://x", "tls.ca": path}, Spec: spec()})
	if err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("Open = %v, want an error saying the file holds no certificate", err)
	}
}
