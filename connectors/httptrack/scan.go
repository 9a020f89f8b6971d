package httptrack

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// The decoder validates a body once with json.Valid and then walks it with
// the small scanners below, which slice members and elements out of the
// body without copying or decoding them: a batch of a hundred events is
// scanned about twice instead of decoded into maps level by level. They
// assume valid JSON; on anything else they return errNotScannable rather
// than a wrong answer.

var errNotScannable = errors.New("not a JSON value of the expected kind")

// member is one member of a JSON object: its name, and its value as a
// subslice of the body.
type member struct {
	name  string
	value json.RawMessage
}

// object is the members of a JSON object, in the order they came, each
// name once (the last of a repeated name wins, as with encoding/json). A
// present but empty object is non-nil. Messages have a dozen members, so
// a slice searched in order is cheaper than a map.
type object []member

// emptyObject is the members of {}: non-nil.
var emptyObject = object{}

// get returns the value of the member name.
func (o object) get(name string) (json.RawMessage, bool) {
	for i := range o {
		if o[i].name == name {
			return o[i].value, true
		}
	}
	return nil, false
}

// del removes the member name.
func (o *object) del(name string) {
	for i := range *o {
		if (*o)[i].name == name {
			*o = slices.Delete(*o, i, i+1)
			return
		}
	}
}

// sortByName sorts the members by name.
func (o object) sortByName() {
	slices.SortFunc(o, func(a, b member) int { return strings.Compare(a.name, b.name) })
}

// arena hands out the member slices of one request from one growing
// buffer, so that a batch of a hundred messages does not allocate a
// hundred maps. Slices handed out stay valid when the buffer grows.
type arena struct {
	members []member
}

// scanMembers returns the members of the JSON object b, the values as
// subslices of b. b must be valid JSON. a may be nil.
func scanMembers(a *arena, b []byte) (object, error) {
	if a == nil {
		a = &arena{}
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotScannable
	}
	start := len(a.members)
	var index map[string]int // by name, once an object has many members
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return emptyObject, nil
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
		val := json.RawMessage(b[i:vend:vend])
		// A repeated name replaces the earlier value.
		seen := -1
		if index != nil {
			if j, ok := index[key]; ok {
				seen = j
			}
		} else {
			for j := start; j < len(a.members); j++ {
				if a.members[j].name == key {
					seen = j
					break
				}
			}
		}
		if seen >= 0 {
			a.members[seen].value = val
		} else {
			a.members = append(a.members, member{name: key, value: val})
			if index != nil {
				index[key] = len(a.members) - 1
			} else if len(a.members)-start > 32 {
				index = make(map[string]int, 64)
				for j := start; j < len(a.members); j++ {
					index[a.members[j].name] = j
				}
			}
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, errNotScannable
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			n := len(a.members)
			return object(a.members[start:n:n]), nil
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
	out := make([]json.RawMessage, 0, 16)
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
		return internName(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// internName returns b as a string, without allocating for the member
// names the SDKs send.
func internName(b []byte) string {
	switch string(b) { // no allocation: the compiler compares in place
	case "type":
		return "type"
	case "userId":
		return "userId"
	case "anonymousId":
		return "anonymousId"
	case "messageId":
		return "messageId"
	case "event":
		return "event"
	case "name":
		return "name"
	case "properties":
		return "properties"
	case "traits":
		return "traits"
	case "context":
		return "context"
	case "integrations":
		return "integrations"
	case "timestamp":
		return "timestamp"
	case "originalTimestamp":
		return "originalTimestamp"
	case "sentAt":
		return "sentAt"
	case "writeKey":
		return "writeKey"
	case "batch":
		return "batch"
	case "groupId":
		return "groupId"
	case "previousId":
		return "previousId"
	case "library":
		return "library"
	case "version":
		return "version"
	case "ip":
		return "ip"
	case "userAgent":
		return "userAgent"
	case "locale":
		return "locale"
	case "page":
		return "page"
	case "device":
		return "device"
	case "os":
		return "os"
	case "app":
		return "app"
	case "screen":
		return "screen"
	case "network":
		return "network"
	case "timezone":
		return "timezone"
	case "campaign":
		return "campaign"
	case "_metadata":
		return "_metadata"
	case "category":
		return "category"
	}
	return string(b)
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
