package httptrack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)

	h := start(t, map[string]string{"tls.cert": certPath, "tls.key": keyPath}, nil)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	h.client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	h.url = strings.Replace(h.url, "http://", "https://", 1)
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"Secure"}`, auth), 200)
	if n := len(h.records()); n != 1 {
		t.Errorf("%d records, want 1", n)
	}
}

// TestTLS_FilesCheckedAtValidate: a tls.cert or tls.key that is missing or
// not PEM is found by the spec's check (tributary validate, the REST
// validate endpoint), not only when the source opens.
func TestTLS_FilesCheckedAtValidate(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "cert.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][2]string{
		"missing": {filepath.Join(dir, "nope.pem"), filepath.Join(dir, "nope.key")},
		"not PEM": {notPEM, notPEM},
	} {
		cfg := connect.Config{Pipeline: "p", Connector: "web", Spec: Connector().Spec,
			Values: map[string]string{"write.keys": "k", "tls.cert": files[0], "tls.key": files[1]}}
		err := cfg.Validate()
		var fe connect.FieldError
		if !errors.As(err, &fe) || fe.Param != "tls.cert" || !strings.Contains(err.Error(), files[0]) {
			t.Errorf("%s: validate = %v; want a tls.cert error naming %s", name, err, files[0])
		}
	}
}
