package pipelines

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// MaskMessage hides in msg, a message about the config cfg of a connector
// (or transform) described by spec, whatever spec.Mask hides in cfg: the
// values of secret parameters, and the parts of other values that the
// spec's Redact masks (a URL's key, a header's token). A check may quote a
// value whole or in part, plain or quoted, so each secret is hidden
// wherever it occurs; a redacted value then reads as Mask shows it
// ("?hapikey=********").
func MaskMessage(spec connect.Spec, cfg map[string]string, msg string) string {
	return hideSecrets(msg, specSecrets(spec, cfg))
}

// MaskMessageKeys is MaskMessage that also hides the values of cfg's keys
// in secretKeys (a connector's ConnectorSpec.Secrets: values that came
// from the environment, say).
func MaskMessageKeys(spec connect.Spec, cfg map[string]string, secretKeys []string, msg string) string {
	secrets := specSecrets(spec, cfg)
	for _, k := range secretKeys {
		secrets = append(secrets, cfg[k])
	}
	return hideSecrets(msg, secrets)
}

// specSecrets returns the texts of cfg that spec.Mask hides.
func specSecrets(spec connect.Spec, cfg map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[k]
		if v == "" {
			continue
		}
		if p, ok := spec.Param(k); ok && p.IsSecret() {
			out = append(out, v)
			continue
		}
		if spec.Redact != nil {
			if m := spec.Redact(k, v); m != v {
				out = append(out, redactedParts(v, m)...)
			}
		}
	}
	return out
}

// redactedParts returns the parts of v that redacted, v as Redact returned
// it, shows as connect.Masked. When redacted is not v with parts replaced
// by the mask, it returns v itself, to be hidden whole.
func redactedParts(v, redacted string) []string {
	segs := strings.Split(redacted, connect.Masked)
	if len(segs) < 2 || !strings.HasPrefix(v, segs[0]) {
		return []string{v}
	}
	var parts []string
	pos := len(segs[0])
	for i, seg := range segs[1:] {
		var end int
		if i == len(segs)-2 {
			// The last literal is v's end.
			end = len(v) - len(seg)
			if !strings.HasSuffix(v, seg) || end <= pos {
				return []string{v}
			}
		} else {
			j := strings.Index(v[min(pos+1, len(v)):], seg)
			if j < 0 {
				return []string{v}
			}
			end = min(pos+1, len(v)) + j
		}
		parts = append(parts, v[pos:end])
		pos = end + len(seg)
	}
	return parts
}

// hideSecrets replaces each secret in msg by connect.Masked, as it is and
// as it reads inside a quoted string; the longest first, so that a secret
// holding another is hidden whole.
func hideSecrets(msg string, secrets []string) string {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	for _, v := range slices.Compact(secrets) {
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			msg = strings.ReplaceAll(msg, q[1:len(q)-1], connect.Masked)
		}
		msg = strings.ReplaceAll(msg, v, connect.Masked)
	}
	return msg
}
