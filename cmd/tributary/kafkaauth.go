package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/tributary-io/tributary/engine/kafkabackend"
	"github.com/tributary-io/tributary/log/kafka"
	"github.com/tributary-io/tributary/pipelines"
)

// kafkaBackendOptions turns log.kafka into the kafka backend's options:
// brokers, client TLS and SASL credentials.
func kafkaBackendOptions(k pipelines.Kafka) (kafkabackend.Options, error) {
	opts := kafkabackend.Options{Brokers: k.Brokers}
	if k.SessionTimeout > 0 {
		// Heartbeats a third of the session apart at most, as Kafka
		// advises, and never less often than kgo's default of 3 s.
		opts.SessionTimeout, opts.HeartbeatInterval = k.SessionTimeout, min(k.SessionTimeout/3, 3*time.Second)
	}
	if t := k.TLS; t != nil {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
		if t.CA != "" {
			pool, err := certPool(t.CA)
			if err != nil {
				return opts, err
			}
			cfg.RootCAs = pool
		}
		if t.Cert != "" {
			cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
			if err != nil {
				return opts, fmt.Errorf("log.kafka.tls: load client certificate %s and key %s: %w", t.Cert, t.Key, err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts.TLS = cfg
	}
	if s := k.SASL; s != nil {
		opts.SASLMechanism, opts.SASLUser, opts.SASLPassword = s.Mechanism, s.Username, s.Password
	}
	return opts, nil
}

// kafkaListenerOptions turns log.kafka into the listener's TLS and the
// users it accepts through SASL. SCRAM credentials are derived here, once,
// with a random salt: the listener never keeps a password.
func kafkaListenerOptions(k pipelines.Kafka) (kafka.Options, error) {
	opts := kafka.Options{DisableAutoCreate: k.NoAutoCreateTopics}
	if t := k.TLS; t != nil {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return opts, fmt.Errorf("log.kafka.tls: load the listener's certificate %s and key %s: %w", t.Cert, t.Key, err)
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		if t.CA != "" {
			pool, err := certPool(t.CA)
			if err != nil {
				return opts, err
			}
			cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
		opts.TLS = cfg
	}
	s := k.SASL
	if s == nil {
		return opts, nil
	}
	if slices.Contains(s.Mechanisms, "PLAIN") {
		users := s.Users
		opts.SASLPlain = func(user, password string) bool {
			want, ok := users[user]
			return ok && want == password
		}
	}
	scram := map[string]map[string]kafka.ScramCredential{}
	for _, m := range []string{kafka.ScramSHA256, kafka.ScramSHA512} {
		if !slices.Contains(s.Mechanisms, m) {
			continue
		}
		scram[m] = map[string]kafka.ScramCredential{}
		for user, password := range s.Users {
			c, err := kafka.NewScramCredential(m, password, 0)
			if err != nil {
				return opts, fmt.Errorf("log.kafka.sasl: SCRAM credential of user %q: %w", user, err)
			}
			scram[m][user] = c
		}
	}
	if len(scram) > 0 {
		opts.SASLScram = func(mechanism, user string) (kafka.ScramCredential, bool) {
			c, ok := scram[mechanism][user]
			return c, ok
		}
	}
	return opts, nil
}

// certPool reads PEM certificates from path.
func certPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("log.kafka.tls.ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("log.kafka.tls.ca: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// kcatHint is the kcat flags the listener's TLS and SASL settings need.
func kcatHint(k pipelines.Kafka) string {
	hint := ""
	switch {
	case k.TLS != nil && k.SASL != nil:
		hint = " -X security.protocol=SASL_SSL"
	case k.TLS != nil:
		hint = " -X security.protocol=SSL"
	case k.SASL != nil:
		hint = " -X security.protocol=SASL_PLAINTEXT"
	}
	if k.SASL != nil && len(k.SASL.Mechanisms) > 0 {
		hint += " -X sasl.mechanisms=" + k.SASL.Mechanisms[0] + " -X sasl.username=… -X sasl.password=…"
	}
	return hint
}
