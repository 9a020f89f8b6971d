package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Name is the connector's name in pipeline files.
const Name = "webhook"

// version is the connector's version.
const version = "0.1.0"

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the webhook sink.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSink,
		Version:     version,
		Description: "Delivers records over HTTP (webhooks, CRM batch endpoints) from templates, in order per key, with retries, rate limiting and Standard Webhooks signatures.",
		Spec:        spec(),
		NewSink:     func() connect.Sink { return &Sink{} },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "url", Type: connect.TypeString, Required: true,
			Description: "URL to send to, http or https; a template over the record, e.g. https://crm.example.com/contacts/{{ .Value.after.id }}."},
		{Name: "method", Type: connect.TypeString, Default: "POST",
			Description: "HTTP method; a template, e.g. {{ if eq .Value.op \"d\" }}DELETE{{ else }}PUT{{ end }}."},
		{Name: "headers", Type: connect.TypeString,
			Description: "Request headers, one Name: value per line (or a list of Name: value items); values are templates. Content-Type defaults to application/json."},
		{Name: "body", Type: connect.TypeString,
			Description: "Request body: a template over the record. Empty sends the record value, as it is when it is JSON, else as a JSON string."},
		{Name: "batch.size", Type: connect.TypeInt, Default: "1", Min: "1",
			Description: "Most records per request. Above 1, a request carries a JSON array of the records' bodies (or batch.body), at most one record per key."},
		{Name: "batch.body", Type: connect.TypeString,
			Description: "In batch mode, the request body: a template over .Items (the records' bodies, each JSON), .Records and .ID, e.g. {\"inputs\": {{ json .Items }}}. Empty sends the JSON array of the items."},
		{Name: "tombstones", Type: connect.TypeString, Default: "skip", Enum: []string{"skip", "send"},
			Description: "What to do with records that have a null value: skip them (counted as delivered), or send them with the templates (.Value is null, the default body is null)."},
		{Name: "signing.secret", Type: connect.TypePassword,
			Description: "Standard Webhooks secret (whsec_ followed by base64); adds webhook-id, webhook-timestamp and webhook-signature headers. Several secrets separated by spaces sign with each (key rotation)."},
		{Name: "idempotency.header", Type: connect.TypeString, Default: "Idempotency-Key",
			Description: "Header that carries the delivery id (the same on every retry and after a restart), so that a receiver can drop redeliveries; \"none\" sends no such header."},
		{Name: "concurrency", Type: connect.TypeInt, Default: "8", Min: "1",
			Description: "Most requests in flight. Records of one key are always sent one after the other, in log order."},
		{Name: "rate.limit", Type: connect.TypeFloat, Default: "0", Min: "0",
			Description: "Most requests per second for the whole sink, retries included; 0 is unlimited."},
		{Name: "timeout", Type: connect.TypeDuration, Default: "30s", Positive: true,
			Description: "How long one request may take, until the whole answer is read; a request that times out is retried."},
		{Name: "max.attempts", Type: connect.TypeInt, Default: "10", Min: "0",
			Description: "Most attempts per request before its records fail with the last error (dead-lettered with errors.tolerance: all); 0 is unlimited."},
		{Name: "max.elapsed", Type: connect.TypeDuration, Default: "5m", Min: "0s",
			Description: "Longest time spent retrying one request before its records fail with the last error; 0 is unlimited."},
		{Name: "backoff.initial", Type: connect.TypeDuration, Default: "200ms", Min: "0s",
			Description: "Backoff before the second attempt; it doubles with each attempt, and the wait is drawn at random below it (full jitter)."},
		{Name: "backoff.max", Type: connect.TypeDuration, Default: "30s", Min: "0s",
			Description: "Largest backoff between attempts (a Retry-After may ask for longer, and is honoured)."},
		{Name: "retry.statuses", Type: connect.TypeList,
			Description: "More HTTP statuses to retry besides 408, 429 and 5xx, e.g. 403 for Salesforce's REQUEST_LIMIT_EXCEEDED. A status listed here is retried even where the sink would otherwise fail the task (410, 401) or the record (other 4xx, 3xx)."},
		{Name: "tls.ca", Type: connect.TypeString,
			Description: "PEM file of the certificate authorities to trust for https, instead of the system's roots."},
		{Name: "tls.cert", Type: connect.TypeString,
			Description: "PEM file of the client certificate (and its chain) the sink presents to a receiver that asks for one (mutual TLS); with tls.key."},
		{Name: "tls.key", Type: connect.TypeString,
			Description: "PEM file of the private key of tls.cert (unencrypted); with tls.cert."},
	}, Check: checkSettings, Redact: redact}
}

// checkSettings is the spec's whole-config check: what Open refuses
// before it touches the network or the disk (templates that do not parse,
// a URL that is not http or https, header lines, signing secrets), so that
// pipeline validation reports it where it is written.
func checkSettings(cfg connect.Config) error {
	_, err := parseSettings(cfg)
	return err
}

// settings are the parsed configuration of a Sink.
type settings struct {
	url, method, body, batchBody *textTemplate // body and batchBody are nil by default
	headers                      []headerTemplate
	baseHeader                   http.Header // the static headers, User-Agent and Content-Type
	templatedHeaders             bool        // some header values are templates
	sendTombstones               bool
	signingKeys                  [][]byte
	idemHeader                   string // "" for none
	batchSize                    int
	concurrency                  int
	rateLimit                    float64
	timeout                      time.Duration
	maxAttempts                  int
	maxElapsed                   time.Duration
	backoffInitial, backoffMax   time.Duration
	retryStatuses                map[int]bool
	rootCAs                      *x509.CertPool   // tls.ca; nil: the system's roots
	clientCert                   *tls.Certificate // tls.cert and tls.key; nil: none
	secrets                      []string         // values to mask
}

func parseSettings(cfg connect.Config) (settings, error) {
	cfg.Spec = spec()
	var s settings
	var errs []error
	str := func(name string) string {
		v, err := cfg.String(name)
		errs = append(errs, err)
		return v
	}
	integer := func(name string, min int64) int {
		v, err := cfg.Int(name)
		if err == nil && v < min {
			err = connect.FieldError{Param: name, Message: fmt.Sprintf("%d is less than %d", v, min)}
		}
		errs = append(errs, err)
		return int(v)
	}
	duration := func(name string) time.Duration {
		v, err := cfg.Duration(name)
		if err == nil && v < 0 {
			err = connect.FieldError{Param: name, Message: "must not be negative"}
		}
		errs = append(errs, err)
		return v
	}
	tmpl := func(name string) *textTemplate {
		v := str(name)
		if v == "" {
			return nil
		}
		t, err := parseTemplate(name, v)
		if err != nil {
			errs = append(errs, connect.FieldError{Param: name, Message: err.Error()})
		}
		return t
	}

	s.url = tmpl("url")
	s.method = tmpl("method")
	s.body = tmpl("body")
	s.batchBody = tmpl("batch.body")
	if s.url == nil {
		if v, _ := cfg.String("url"); v == "" { // else the template did not parse, reported above
			errs = append(errs, connect.FieldError{Param: "url", Message: "required parameter is missing: the URL to send to"})
		}
	} else if s.url.t == nil {
		if err := checkURL(s.url.static); err != nil {
			errs = append(errs, connect.FieldError{Param: "url", Message: err.Error()})
		}
	}
	if s.method != nil && s.method.t == nil {
		if err := checkMethod(s.method.static); err != nil {
			errs = append(errs, connect.FieldError{Param: "method", Message: err.Error()})
		}
	}
	headers, herr := parseHeaders(str("headers"))
	if herr != nil {
		errs = append(errs, connect.FieldError{Param: "headers", Message: herr.Error()})
	}
	s.headers = headers
	s.baseHeader = http.Header{"User-Agent": {userAgent}, "Content-Type": {"application/json"}}
	for _, h := range headers {
		if h.value.t != nil {
			s.templatedHeaders = true
			continue
		}
		s.baseHeader.Set(h.name, h.value.static)
	}
	s.sendTombstones = str("tombstones") == "send"
	if secret := str("signing.secret"); secret != "" {
		for _, sec := range strings.Fields(secret) {
			key, err := signingKey(sec)
			if err != nil {
				errs = append(errs, connect.FieldError{Param: "signing.secret", Message: err.Error()})
				continue
			}
			s.signingKeys = append(s.signingKeys, key)
			s.secrets = append(s.secrets, sec, strings.TrimPrefix(sec, "whsec_"))
		}
	}
	if h := str("idempotency.header"); h != "" && h != "none" {
		if !validHeaderName(h) {
			errs = append(errs, connect.FieldError{Param: "idempotency.header", Message: fmt.Sprintf("%q is not a valid header name", h)})
		}
		s.idemHeader = h
	}
	s.batchSize = integer("batch.size", 1)
	s.concurrency = integer("concurrency", 1)
	rate, err := cfg.Float("rate.limit")
	errs = append(errs, err)
	if s.rateLimit = rate; rate < 0 {
		errs = append(errs, connect.FieldError{Param: "rate.limit", Message: "must not be negative"})
	}
	s.timeout = duration("timeout")
	if s.timeout == 0 {
		errs = append(errs, connect.FieldError{Param: "timeout", Message: "must be more than 0"})
	}
	s.maxAttempts = integer("max.attempts", 0)
	s.maxElapsed = duration("max.elapsed")
	s.backoffInitial = duration("backoff.initial")
	s.backoffMax = duration("backoff.max")
	if s.backoffInitial <= 0 {
		s.backoffInitial = time.Millisecond
	}
	s.backoffMax = max(s.backoffMax, s.backoffInitial)
	statuses, err := cfg.List("retry.statuses")
	errs = append(errs, err)
	s.retryStatuses = make(map[int]bool)
	for _, v := range statuses {
		code, err := strconv.Atoi(v)
		if err != nil || code < 100 || code > 599 {
			errs = append(errs, connect.FieldError{Param: "retry.statuses", Message: fmt.Sprintf("%q is not an HTTP status (100 to 599)", v)})
			continue
		}
		s.retryStatuses[code] = true
	}
	var tlsErrs []error
	s.rootCAs, s.clientCert, tlsErrs = loadTLSFiles(str("tls.ca"), str("tls.cert"), str("tls.key"))
	errs = append(errs, tlsErrs...)
	if err := errors.Join(errs...); err != nil {
		return settings{}, err
	}
	s.secrets = append(s.secrets, secretValues(cfg.Values, s.headers)...)
	return s, nil
}

// loadTLSFiles reads the PEM files of tls.ca, tls.cert and tls.key (each
// "" when unset). It runs in the spec's Check as in Open, so that
// `tributary validate` and the REST validate endpoint report a file that is
// missing, unreadable or not PEM, naming the setting and the path. The
// files are read again at each Open: a renewed certificate is picked up
// when the task restarts.
func loadTLSFiles(caPath, certPath, keyPath string) (*x509.CertPool, *tls.Certificate, []error) {
	var errs []error
	field := func(name, format string, args ...any) {
		errs = append(errs, connect.FieldError{Param: name, Message: fmt.Sprintf(format, args...)})
	}
	read := func(name, path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			field(name, "cannot read %s: %v; give the path of a PEM file the worker's user may read", path, unwrapPath(err))
			return nil
		}
		return b
	}
	var pool *x509.CertPool
	if caPath != "" {
		if b := read("tls.ca", caPath); b != nil {
			pool = x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				field("tls.ca", "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", caPath)
				pool = nil
			}
		}
	}
	switch {
	case certPath != "" && keyPath == "":
		field("tls.key", "missing: tls.cert is set, and a client certificate needs its private key; set both tls.cert and tls.key, or neither")
	case certPath == "" && keyPath != "":
		field("tls.cert", "missing: tls.key is set, and a private key needs its client certificate; set both tls.cert and tls.key, or neither")
	}
	if certPath == "" || keyPath == "" {
		return pool, nil, errs
	}
	certPEM, keyPEM := read("tls.cert", certPath), read("tls.key", keyPath)
	if certPEM == nil || keyPEM == nil {
		return pool, nil, errs
	}
	if !hasPEMBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" }) {
		field("tls.cert", "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", certPath)
		return pool, nil, errs
	}
	if !hasPEMBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }) {
		field("tls.key", "%s holds no PEM private key (-----BEGIN PRIVATE KEY-----, or RSA or EC PRIVATE KEY)", keyPath)
		return pool, nil, errs
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		field("tls.key", "%s does not go with the certificate of tls.cert (%s): %v", keyPath, certPath, err)
		return pool, nil, errs
	}
	return pool, &cert, errs
}

// hasPEMBlock reports whether data holds a PEM block whose type is ok.
func hasPEMBlock(data []byte, ok func(typ string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if ok(b.Type) {
			return true
		}
	}
}

// unwrapPath returns the error under a *fs.PathError, whose message
// repeats the path the caller already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// newTransport returns the HTTP transport of a sink: the default one's
// proxy and dial settings, enough idle connections for concurrency, the
// roots of tls.ca when set, and the client certificate of tls.cert and
// tls.key when set.
func newTransport(s settings) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(100, 2*s.concurrency)
	t.MaxIdleConnsPerHost = s.concurrency
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.rootCAs}
	if s.clientCert != nil {
		t.TLSClientConfig.Certificates = []tls.Certificate{*s.clientCert}
	}
	return t
}

// Open checks the configuration, compiles the templates and prepares the
// HTTP client. It sends nothing.
func (s *Sink) Open(_ context.Context, cfg connect.Config) error {
	set, err := parseSettings(cfg)
	if err != nil {
		return fmt.Errorf("webhook sink config: %w", err)
	}
	transport := newTransport(set)
	s.set = set
	s.transport = transport
	s.client = &http.Client{
		Transport: transport,
		// A 3xx is an answer, not a detour: the record fails with it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	base := s.logger
	if base == nil {
		base = slog.Default()
	}
	s.log = base.With("connector", Name, "pipeline", cfg.Pipeline, "sink", cfg.Connector)
	s.lim = newLimiter(set.rateLimit)
	s.mask = newMasker(set.secrets)
	s.prev, s.prevOut = nil, nil
	return nil
}

// Close drops the idle connections. No request is in flight: Write waits
// for its requests before it returns.
func (s *Sink) Close(context.Context) error {
	if s.transport != nil {
		s.transport.CloseIdleConnections()
		s.transport = nil
	}
	return nil
}
