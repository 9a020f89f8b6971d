package webhook

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// minEnvSecret is the shortest environment variable value that is masked
// when it occurs in a setting: shorter ones (1, true, en_US) are too likely
// to occur by chance.
const minEnvSecret = 8

// sensitiveHeaderWords mark a header whose value is a credential.
var sensitiveHeaderWords = []string{"authorization", "cookie", "key", "token", "secret", "auth", "password", "signature", "session"}

// secretValues returns the values to mask: static values of headers that
// carry credentials (the part after a scheme such as Bearer),
// and the values of environment variables that occur in the templated
// settings, which is where ${VAR} secrets of a pipeline end up.
func secretValues(values map[string]string, headers []headerTemplate) []string {
	var out []string
	for _, h := range headers {
		if h.value.t != nil || !sensitiveHeader(h.name) {
			continue
		}
		out = append(out, headerCredential(h.value.static))
	}
	out = append(out, urlCredentials(values["url"])...)
	var settings []string
	for _, k := range []string{"url", "method", "headers", "body", "batch.body"} {
		if v := values[k]; v != "" {
			settings = append(settings, v)
		}
	}
	for _, kv := range os.Environ() {
		_, v, _ := strings.Cut(kv, "=")
		if len(v) < minEnvSecret {
			continue
		}
		for _, s := range settings {
			if strings.Contains(s, v) {
				out = append(out, v)
				if p := urlPath(v); len(p) >= minEnvSecret {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// urlPath returns the path, query and fragment of an absolute http or
// https URL ("" for anything else). When a URL is a secret as a whole (a
// Slack, Zapier or Discord webhook URL in a ${VAR}), its path is the
// secret part, and it is masked on its own too: a redirect's Location on
// another scheme or host (http to https) holds it without the rest.
func urlPath(v string) string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok || (!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https")) {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return rest[i:]
	}
	return ""
}

// headerCredential returns the credential in a sensitive header's value:
// the part after a scheme (Bearer, Basic), so that messages still say
// which scheme was used, else the whole value.
func headerCredential(v string) string {
	v = strings.TrimSpace(v)
	if _, cred, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(cred)) >= 4 {
		v = strings.TrimSpace(cred)
	}
	return v
}

// urlCredentials returns the credentials a URL (or URL template) carries:
// the password of its user info, and the values of query parameters whose
// names look like credentials (hapikey, api_key, token, secret, ...).
func urlCredentials(u string) []string {
	var out []string
	if _, rest, ok := strings.Cut(u, "://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		if userinfo, _, ok := strings.Cut(host, "@"); ok {
			if _, pass, ok := strings.Cut(userinfo, ":"); ok && pass != "" {
				out = append(out, pass)
			}
		}
	}
	_, query, ok := strings.Cut(u, "?")
	if !ok {
		return out
	}
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.Split(query, "&") {
		name, v, _ := strings.Cut(kv, "=")
		if v != "" && sensitiveHeader(name) {
			out = append(out, v)
		}
	}
	return out
}

// redact masks the credentials in a setting's value: those of
// sensitive header lines in headers, and those of the URL in url. It is
// the connector's connect.Spec.Redact, so that REST answers, status and
// logs show "Authorization: Bearer ********" and "?hapikey=********".
func redact(name, value string) string {
	var secrets []string
	switch name {
	case "url":
		secrets = urlCredentials(value)
	case "headers":
		for _, line := range splitHeaders(value) {
			if n, v, ok := strings.Cut(line, ":"); ok && sensitiveHeader(strings.TrimSpace(n)) {
				secrets = append(secrets, headerCredential(v))
			}
		}
	}
	return newMasker(secrets).String(value)
}

func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveHeaderWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// masker replaces secret values by connect.Masked. A nil masker masks
// nothing.
type masker struct{ r *strings.Replacer }

func newMasker(secrets []string) *masker {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	if len(secrets) == 0 {
		return nil
	}
	// The longest first, so that a secret holding another is masked whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	secrets = slices.Compact(secrets)
	args := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		args = append(args, s, connect.Masked)
	}
	return &masker{r: strings.NewReplacer(args...)}
}

// String returns s with every secret masked.
func (m *masker) String(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

// Error returns err with every secret in its message masked. The result
// does not unwrap to err, so the secrets cannot be reached through it.
func (m *masker) Error(err error) error {
	if err == nil || m == nil {
		return err
	}
	return errors.New(m.r.Replace(err.Error()))
}
