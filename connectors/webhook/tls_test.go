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

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(10), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// clientCert issues a client certificate and writes it and its key as PEM
// files into dir; it returns their paths.
func (ca *testCA) clientCert(t *testing.T, dir, name string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(11), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	writeTestFile(t, certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeTestFile(t, keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return certPath, keyPath
}

func writeTestFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLS_ClientCertificate: against a receiver that requires a client
// certificate signed by its CA, the sink delivers with tls.cert and
// tls.key; without them, or with a certificate of another CA, no retry
// can help: the task fails with a hint that names the settings.
func TestTLS_ClientCertificate(t *testing.T) {
	dir := t.TempDir()
	clientCA := newTestCA(t, "webhook test client CA")
	rc := &receiver{}
	srv, caPath := newTLSReceiver(t, rc)
	srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	srv.TLS.ClientCAs = x509.NewCertPool()
	srv.TLS.ClientCAs.AddCert(clientCA.cert)
	certPath, keyPath := clientCA.clientCert(t, dir, "sink")

	s := open(t, fast(map[string]string{"url": srv.URL + "/hook", "tls.ca": caPath, "tls.cert": certPath, "tls.key": keyPath}))
	if err := s.Write(t.Context(), events([]string{"a", "b"}, 2)); err != nil {
		t.Fatalf("Write with the client certificate = %v", err)
	}
	if n := len(rc.requests()); n != 4 {
		t.Errorf("%d requests over mutual TLS, want 4", n)
	}

	s2 := open(t, fast(map[string]string{"url": srv.URL + "/hook", "tls.ca": caPath}))
	err := s2.Write(t.Context(), events([]string{"a"}, 1))
	if err == nil || connect.IsBadRecord(err) || connect.IsRetryable(err) || !strings.Contains(err.Error(), "set tls.cert and tls.key") {
		t.Errorf("Write without a client certificate = %v, want a plain error with the tls.cert hint", err)
	}

	otherCert, otherKey := newTestCA(t, "another CA").clientCert(t, dir, "stranger")
	s3 := open(t, fast(map[string]string{"url": srv.URL + "/hook", "tls.ca": caPath, "tls.cert": otherCert, "tls.key": otherKey}))
	err = s3.Write(t.Context(), events([]string{"a"}, 1))
	if err == nil || connect.IsBadRecord(err) || connect.IsRetryable(err) || !strings.Contains(err.Error(), "refuses the client certificate of tls.cert") {
		t.Errorf("Write with a certificate of another CA = %v, want a plain error saying the receiver refuses it", err)
	}
	if n := len(rc.requests()); n != 4 {
		t.Errorf("%d requests answered in all, want the 4 of the first sink", n)
	}
}

// TestSpec_ChecksTLSFiles: the files of tls.ca, tls.cert and tls.key are
// checked by the spec's Validate (what `tributary validate` and the REST
// validate endpoint run), not first at Open: each problem names the
// setting and the path.
func TestSpec_ChecksTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "webhook test CA")
	caPath := filepath.Join(dir, "ca.pem")
	writeTestFile(t, caPath, ca.pem)
	certPath, keyPath := ca.clientCert(t, dir, "sink")
	_, otherKey := ca.clientCert(t, dir, "other")
	notPEM := filepath.Join(dir, "notes.txt")
	writeTestFile(t, notPEM, []byte("not a certificate"))
	missing := filepath.Join(dir, "missing.pem")

	for _, tc := range []struct {
		name   string
		values map[string]string
		param  string
		want   []string // in the message
	}{
		{"ca missing", map[string]string{"tls.ca": missing}, "tls.ca", []string{missing, "no such file"}},
		{"ca not PEM", map[string]string{"tls.ca": notPEM}, "tls.ca", []string{notPEM, "holds no PEM certificate"}},
		{"cert without key", map[string]string{"tls.cert": certPath}, "tls.key", []string{"set both tls.cert and tls.key, or neither"}},
		{"key without cert", map[string]string{"tls.key": keyPath}, "tls.cert", []string{"set both tls.cert and tls.key, or neither"}},
		{"cert missing", map[string]string{"tls.cert": missing, "tls.key": keyPath}, "tls.cert", []string{missing, "no such file"}},
		{"cert not PEM", map[string]string{"tls.cert": notPEM, "tls.key": keyPath}, "tls.cert", []string{notPEM, "holds no PEM certificate"}},
		{"key is a certificate", map[string]string{"tls.cert": certPath, "tls.key": certPath}, "tls.key", []string{certPath, "holds no PEM private key"}},
		{"key of another cert", map[string]string{"tls.cert": certPath, "tls.key": otherKey}, "tls.key", []string{otherKey, "does not go with the certificate", certPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]string{"url": "https://crm.example.com/hook"}
			for k, v := range tc.values {
				values[k] = v
			}
			errs := spec().Validate(values)
			if len(errs) != 1 || errs[0].Param != tc.param {
				t.Fatalf("Validate = %v, want one error on %s", errs, tc.param)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Message, w) {
					t.Errorf("%s: %q does not say %q", tc.param, errs[0].Message, w)
				}
			}
		})
	}
	if errs := spec().Validate(map[string]string{"url": "https://x", "tls.ca": caPath, "tls.cert": certPath, "tls.key": keyPath}); errs != nil {
		t.Errorf("Validate of good files = %v, want nil", errs)
	}
}
