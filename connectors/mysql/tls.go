package mysql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/go-sql-driver/mysql"
)

// TLS modes (tls.mode), as MySQL's --ssl-mode and Debezium's
// database.ssl.mode name them.
const (
	tlsDisabled   = "disabled"    // plain text
	tlsPreferred  = "preferred"   // TLS when the server offers it, unverified; else plain text
	tlsRequired   = "required"    // TLS, unverified
	tlsVerifyCA   = "verify-ca"   // TLS, the certificate chain checked against tls.ca
	tlsVerifyFull = "verify-full" // and the host name against the certificate
)

var tlsModes = []string{tlsDisabled, tlsPreferred, tlsRequired, tlsVerifyCA, tlsVerifyFull}

// dsnTLSModes are the go-sql-driver DSN's tls values, which apply when
// tls.mode is not set.
var dsnTLSModes = map[string]string{
	"true": tlsVerifyFull, "skip-verify": tlsRequired, "preferred": tlsPreferred,
	"false": tlsDisabled, "0": tlsDisabled, "1": tlsVerifyFull,
}

// tlsConfig builds the TLS configuration of a mode for host; nil for
// disabled.
func tlsConfig(mode, caFile, host string) (*tls.Config, error) {
	if mode == tlsDisabled {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if mode == tlsPreferred || mode == tlsRequired {
		cfg.InsecureSkipVerify = true // encryption only, as these modes promise
		return cfg, nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil || caFile != "" {
		roots = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca: %s holds no PEM certificate", caFile)
		}
	}
	cfg.RootCAs = roots
	if mode == tlsVerifyFull {
		cfg.ServerName = host
		return cfg, nil
	}
	// verify-ca: the chain, not the name. crypto/tls checks both or
	// neither, so the chain is checked here.
	cfg.InsecureSkipVerify = true
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("the server sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return fmt.Errorf("server certificate: %w", err)
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
			return fmt.Errorf("server certificate (tls.mode=verify-ca, tls.ca %q): %w", caFile, err)
		}
		return nil
	}
	return cfg, nil
}

// applyTLS sets the driver's TLS from tls.mode and tls.ca. A Unix socket
// gets no TLS in preferred mode (it never leaves the machine).
func applyTLS(cfg *mysql.Config, mode, caFile string) error {
	if cfg.Net == "unix" && mode == tlsPreferred {
		mode = tlsDisabled
	}
	host, _, err := hostPort(cfg)
	if err != nil {
		return err
	}
	t, err := tlsConfig(mode, caFile, host)
	if err != nil {
		return err
	}
	cfg.TLS, cfg.TLSConfig = t, ""
	cfg.AllowFallbackToPlaintext = mode == tlsPreferred
	if t == nil {
		cfg.TLSConfig = "false"
	}
	return nil
}

// binlogTLS returns the TLS configuration of the binlog connection: the
// SQL connection's, except in preferred mode when the server offers no
// TLS (the SQL connection fell back to plain text).
func (s *Source) binlogTLS(ctx context.Context) (*tls.Config, error) {
	if s.set.dsn.TLS == nil {
		return nil, nil
	}
	if s.set.tlsMode == tlsPreferred {
		var name, cipher sql.NullString
		if err := s.db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read Ssl_cipher: %w", err)
		}
		if cipher.String == "" {
			return nil, nil
		}
	}
	return s.set.dsn.TLS.Clone(), nil
}
