package mysql

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// writeCA makes a certificate authority and a server certificate it
// signed, for the DNS name dns only, into dir: ca.pem, server.pem,
// server-key.pem.
func writeCA(t *testing.T, dir, name, dns string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dns}, DNSNames: []string{dns},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+"-ca.pem", "CERTIFICATE", caDER)
	write(name+"-server.pem", "CERTIFICATE", leafDER)
	write(name+"-server-key.pem", "PRIVATE KEY", keyDER)
}

// TestTLS starts a MariaDB server with a certificate for the name
// db.invalid only and a user that must use TLS, and checks every tls.mode:
// the snapshot and the binlog go over TLS (the user could not connect
// otherwise), verify-ca checks the chain and not the name, verify-full
// the name too, disabled is refused.
func TestTLS(t *testing.T) {
	if testServer == nil {
		t.Skipf("no MariaDB server: %v", serverErr)
	}
	certs := t.TempDir()
	writeCA(t, certs, "good", "db.invalid")
	writeCA(t, certs, "other", "db.invalid")
	dir := filepath.Join(root, "tls")
	if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir, true, "--ssl-ca="+filepath.Join(certs, "good-ca.pem"),
		"--ssl-cert="+filepath.Join(certs, "good-server.pem"), "--ssl-key="+filepath.Join(certs, "good-server-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	admin, err := sql.Open("mysql", srv.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		"CREATE DATABASE shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v text)",
		"CREATE USER 'cdc'@'%' IDENTIFIED BY 's3cret' REQUIRE SSL",
		"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%'",
		"INSERT INTO shop.t VALUES (1, 'before')",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := fmt.Sprintf("mysql://cdc:s3cret@127.0.0.1:%d", srv.port)
	open := func(mode, ca string) (*Source, error) {
		v := map[string]string{"tables": "shop.t", "tls.mode": mode}
		if ca != "" {
			v["tls.ca"] = filepath.Join(certs, ca)
		}
		return tryOpen(t, dsn, v, nil)
	}
	n := 1
	for _, tc := range []struct{ mode, ca string }{{"required", ""}, {"preferred", ""}, {"verify-ca", "good-ca.pem"}} {
		s, err := open(tc.mode, tc.ca)
		if err != nil {
			t.Fatalf("tls.mode=%s: %v", tc.mode, err)
		}
		// The snapshot (over the SQL connections), then a streamed row
		// (over the binlog connection).
		readRecords(t, s, n, 30*time.Second)
		n++
		if _, err := admin.Exec("INSERT INTO shop.t VALUES (?, 'streamed')", n); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"id":%d}`, n)
		readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
			return slices.ContainsFunc(r, func(rec connect.Record) bool { return string(rec.Key) == want })
		})
		s.Close(t.Context())
	}
	if _, err := open("verify-ca", "other-ca.pem"); err == nil {
		t.Fatal("verify-ca with another CA: opened")
	} else {
		wantErr(t, err, "certificate")
	}
	if _, err := open("verify-full", "good-ca.pem"); err == nil {
		t.Fatal("verify-full for 127.0.0.1 with a certificate for db.invalid: opened")
	} else {
		wantErr(t, err, "certificate", "verify-full checks the DSN's host name")
	}
	if _, err := open("disabled", ""); err == nil {
		t.Fatal("tls.mode=disabled for a user that requires TLS: opened")
	}
	// tls.ca with a mode that checks no certificate: refused at validate
	// (and by Open, for a caller that skips it).
	bad := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
		Values: map[string]string{"dsn": dsn, "tls.mode": "required", "tls.ca": filepath.Join(certs, "good-ca.pem")}}
	wantErr(t, bad.Validate(), "tls.ca", "verify-ca")
	wantErr(t, Connector().NewSource().Open(t.Context(), bad), "tls.ca", "verify-ca")
}

// TestApplyTLS checks what each tls.mode gives the driver, without a
// server.
func TestApplyTLS(t *testing.T) {
	dir := t.TempDir()
	writeCA(t, dir, "good", "db.invalid")
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for dsn, want := range map[string]string{"u@tcp(h:1)/?tls=true": tlsVerifyFull, "mysql://u@h:1?tls=skip-verify": tlsRequired,
		"u@tcp(h:1)/?tls=false": tlsDisabled, "u@tcp(h:1)/": tlsPreferred} {
		set, err := parseSettings(connect.Config{Connector: "c", Values: map[string]string{"dsn": dsn}, Spec: spec()})
		if err != nil || set.tlsMode != want {
			t.Errorf("dsn %s: tls.mode %q (%v), want %q", dsn, set.tlsMode, err, want)
		}
	}
	for _, tc := range []struct {
		dsn, mode, ca             string
		tls, skipVerify, fallback bool
		serverName, err           string
	}{
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsDisabled},
		{dsn: "u@tcp(db.invalid:3306)/?tls=true", mode: tlsDisabled},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsPreferred, tls: true, skipVerify: true, fallback: true},
		{dsn: "u@unix(/run/mysqld.sock)/", mode: tlsPreferred},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsRequired, tls: true, skipVerify: true},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsVerifyCA, ca: "good-ca.pem", tls: true, skipVerify: true},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsVerifyFull, ca: "good-ca.pem", tls: true, serverName: "db.invalid"},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsVerifyFull, ca: "bad.pem", err: "no PEM certificate"},
		{dsn: "u@tcp(db.invalid:3306)/", mode: tlsVerifyFull, ca: "missing.pem", err: "tls.ca"},
	} {
		cfg, err := parseDSN(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		ca := ""
		if tc.ca != "" {
			ca = filepath.Join(dir, tc.ca)
		}
		err = applyTLS(cfg, tc.mode, ca)
		if tc.err != "" {
			wantErr(t, err, tc.err)
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tc.dsn, tc.mode, err)
		}
		if (cfg.TLS != nil) != tc.tls || cfg.AllowFallbackToPlaintext != tc.fallback {
			t.Errorf("%s %s: TLS %v fallback %v, want %v %v", tc.dsn, tc.mode, cfg.TLS != nil, cfg.AllowFallbackToPlaintext, tc.tls, tc.fallback)
			continue
		}
		if cfg.TLS != nil && (cfg.TLS.InsecureSkipVerify != tc.skipVerify || cfg.TLS.ServerName != tc.serverName) {
			t.Errorf("%s %s: skip verify %v server name %q, want %v %q", tc.dsn, tc.mode, cfg.TLS.InsecureSkipVerify, cfg.TLS.ServerName, tc.skipVerify, tc.serverName)
		}
		if tc.mode == tlsVerifyCA && cfg.TLS.VerifyPeerCertificate == nil {
			t.Errorf("verify-ca: no chain check")
		}
	}
}
