package httptrack

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
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
	off   int  // offset of value in the indexed body; -1 when not indexed
	plain bool // name needs no escaping in JSON: "name" is its literal
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

// getAt returns the value of the member name and its offset in the
// indexed body (-1 when not indexed).
func (o object) getAt(name string) (json.RawMessage, int, bool) {
	for i := range o {
		if o[i].name == name {
			return o[i].value, o[i].off, true
		}
	}
	return nil, -1, false
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

// arena hands out the member slices and messages of one request from
// growing buffers, so that a batch of a hundred messages does not allocate
// a hundred maps. Slices handed out stay valid when a buffer grows. It
// also indexes the objects and arrays of the body, so that the scanners
// find the end of a nested value without walking it again. Arenas are
// pooled (getArena, putArena): nothing handed out may be used after
// putArena.
type arena struct {
	members []member
	// starts and ends index the body's objects and arrays: the one opening
	// at offset starts[k] ends before ends[k]. validIndexed fills them in
	// the order of the opening offsets, so starts is sorted. Empty when
	// the body was not indexed.
	starts, ends []int32
	msgs         []message  // backs the messages of the request
	ptrs         []*message // backs decoded.msgs
}

var arenaPool = sync.Pool{New: func() any { return new(arena) }}

// maxPooledMembers bounds the arenas kept for reuse.
const maxPooledMembers = 1 << 16

func getArena() *arena { return arenaPool.Get().(*arena) }

func putArena(a *arena) {
	if cap(a.members) > maxPooledMembers || cap(a.starts) > maxPooledMembers || cap(a.msgs) > maxPooledMembers/8 {
		return
	}
	a.members, a.starts, a.ends = a.members[:0], a.starts[:0], a.ends[:0]
	clear(a.msgs)
	clear(a.ptrs)
	a.msgs, a.ptrs = a.msgs[:0], a.ptrs[:0]
	arenaPool.Put(a)
}

// newMessage returns a zero message from the arena.
func (a *arena) newMessage() *message {
	if len(a.msgs) == cap(a.msgs) {
		// A new buffer: the messages handed out keep the old one.
		a.msgs = make([]message, 0, max(8, 2*cap(a.msgs)))
	}
	a.msgs = a.msgs[:len(a.msgs)+1]
	return &a.msgs[len(a.msgs)-1]
}

// skip returns the index after the value starting at b[i], or -1, where b
// starts at offset base of the indexed body (base < 0: not indexed).
// Objects and arrays are looked up in the index instead of walked.
func (a *arena) skip(b []byte, i, base int) int {
	if base >= 0 && i < len(b) && (b[i] == '{' || b[i] == '[') && len(a.starts) > 0 {
		if k, ok := slices.BinarySearch(a.starts, int32(base+i)); ok {
			if end := int(a.ends[k]) - base; end > i && end <= len(b) {
				return end
			}
		}
	}
	return skipValue(b, i)
}

// scanMembers returns the members of the JSON object b, the values as
// subslices of b. b must be valid JSON. a may be nil.
func scanMembers(a *arena, b []byte) (object, error) {
	return scanMembersAt(a, b, -1)
}

// scanMembersAt is scanMembers for b at offset base of the body a indexed
// (base < 0: not indexed).
func scanMembersAt(a *arena, b []byte, base int) (object, error) {
	if a == nil {
		a = &arena{}
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errNotScannable
	}
	start := len(a.members)
	var index map[string]int // by name, once an object has many members
	var names uint64         // a bit per (length, first byte) of the names seen
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
		key, plain, err := unquoteKey(b[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errNotScannable
		}
		i = skipSpace(b, i+1)
		vend := a.skip(b, i, base)
		if vend < 0 {
			return nil, errNotScannable
		}
		val := json.RawMessage(b[i:vend:vend])
		off := -1
		if base >= 0 {
			off = base + i
		}
		// A repeated name replaces the earlier value.
		seen := -1
		bit := uint64(1) << ((uint(len(key)) * 7) & 63)
		if len(key) > 0 {
			bit = uint64(1) << ((uint(len(key))*7 + uint(key[0])) & 63)
		}
		if index != nil {
			if j, ok := index[key]; ok {
				seen = j
			}
		} else if names&bit != 0 {
			for j := start; j < len(a.members); j++ {
				if a.members[j].name == key {
					seen = j
					break
				}
			}
		}
		names |= bit
		if seen >= 0 {
			a.members[seen].value, a.members[seen].off = val, off
		} else {
			a.members = append(a.members, member{name: key, value: val, off: off, plain: plain})
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
	out, _, err := scanElementsAt(nil, b, -1)
	return out, err
}

// scanElementsAt is scanElements for b at offset base of the body a
// indexed (base < 0: not indexed); it also returns the elements' offsets
// in the body (nil when not indexed).
func scanElementsAt(a *arena, b []byte, base int) ([]json.RawMessage, []int, error) {
	if a == nil {
		a = &arena{}
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, nil, errNotScannable
	}
	out := make([]json.RawMessage, 0, 16)
	var offs []int
	if base >= 0 {
		offs = make([]int, 0, 16)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, offs, nil
	}
	for i < len(b) {
		end := a.skip(b, i, base)
		if end < 0 {
			return nil, nil, errNotScannable
		}
		out = append(out, b[i:end:end])
		if base >= 0 {
			offs = append(offs, base+i)
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, nil, errNotScannable
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, offs, nil
		default:
			return nil, nil, errNotScannable
		}
	}
	return nil, nil, errNotScannable
}

// unquote returns the string a JSON string literal stands for, as
// encoding/json decodes it (invalid UTF-8 becomes U+FFFD).
func unquote(lit []byte) (string, error) {
	s, _, err := unquoteKey(lit)
	return s, err
}

// unquoteKey is unquote that also says whether the literal was plain: no
// escapes, ASCII only, so that it is exactly what appendString writes for
// the string.
func unquoteKey(lit []byte) (string, bool, error) {
	plain := true
	for _, c := range lit {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return internName(lit[1 : len(lit)-1]), true, nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false, err
	}
	return s, false, nil
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
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
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
