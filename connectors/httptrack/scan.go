package httptrack

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The decoder validates a body once with json.Valid and then walks it with
// the small scanners below, which slice members and elements out of the
// body without copying or decoding them: a batch of a hundred events is
// scanned about twice instead of decoded into maps level by level. They
// assume valid JSON; on anything else they return errNotScannable rather
// than a wrong answer.

var errNotScannable = errors.New("not a JSON value of the expected kind")

// scanMembers returns the members of the JSON object b, by name (the last
// of a repeated name wins, as with encoding/json), the values as subslices
// of b. b must be valid JSON.
func scanMembers(b []byte) (map[string]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotScannable
	}
	m := make(map[string]json.RawMessage, 16)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return m, nil
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, errNotScannable
		}
		end := skipString(b, i)
		if end < 0 {
			return nil, errNotScannable
		}
		key, err := unquote(b[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotScannable
		}
		i = skipSpace(b, i+1)
		vend := skipValue(b, i)
		if vend < 0 {
			return nil, errNotScannable
		}
		m[key] = b[i:vend:vend]
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, errNotScannable
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return m, nil
		default:
			return nil, errNotScannable
		}
	}
	return nil, errNotScannable
}

// scanElements returns the elements of the JSON array b as subslices of b.
// b must be valid JSON.
func scanElements(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errNotScannable
	}
	var out []json.RawMessage
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	for i < len(b) {
		end := skipValue(b, i)
		if end < 0 {
			return nil, errNotScannable
		}
		out = append(out, b[i:end:end])
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, errNotScannable
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, nil
		default:
			return nil, errNotScannable
		}
	}
	return nil, errNotScannable
}

// unquote returns the string a JSON string literal stands for, as
// encoding/json decodes it (invalid UTF-8 becomes U+FFFD).
func unquote(lit []byte) (string, error) {
	plain := true
	for _, c := range lit {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string literal starting at b[i],
// or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\n', '\r', '\t':
				return j
			}
			j++
		}
		return j
	}
}
