package generator

// The generator's first event renderer, kept as the model the faster one
// in event.go is checked against (TestEvent_SameAsModel): it built each
// event with strings and formatted timestamps with time.AppendFormat.

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// refEvent is the content of one generated event: everything but its
// timestamp, derived from (seed, seq) alone by newEvent.
type refEvent struct {
	seq    uint64
	userID string
	name   string
	props  [maxProps]refProp // in output order, the first nprops of them
	nprops int
	rng    rng // continues the event's stream, for padding
}

// refProp is one event property; a value is a string, or a JSON number when
// num is set.
type refProp struct {
	key, value string
	num        bool
}

// refNewEvent derives the event with the given seq from the seed: the same
// (seed, seq) always gives the same event.
func refNewEvent(seed int64, seq, users uint64) refEvent {
	r := newRNG(seed, seq)
	ev := refEvent{seq: seq, userID: "user-" + strconv.FormatUint(1+r.intn(users), 10)}

	pick := r.intn(100)
	for _, k := range eventKinds {
		if pick < k.weight {
			ev.name = k.name
			break
		}
		pick -= k.weight
	}
	str := func(k, v string) { ev.props[ev.nprops] = refProp{key: k, value: v}; ev.nprops++ }
	num := func(k, v string) { ev.props[ev.nprops] = refProp{key: k, value: v, num: true}; ev.nprops++ }
	switch ev.name {
	case "page_view":
		str("path", refOneOf(&r, paths))
		str("referrer", refOneOf(&r, referrers))
	case "click":
		str("path", refOneOf(&r, paths))
		str("element", refOneOf(&r, elements))
	case "search":
		str("path", "/search")
		str("query", refOneOf(&r, queries))
	case "add_to_cart":
		sku := "sku-" + strconv.FormatUint(1001+r.intn(50), 10)
		str("path", "/products/"+sku)
		str("product_id", sku)
		num("price", refCents(500+r.intn(19500)))
		num("quantity", strconv.FormatUint(1+r.intn(3), 10))
	case "signup":
		str("path", "/signup")
		str("plan", refOneOf(&r, plans))
		str("referrer", refOneOf(&r, referrers))
	case "purchase":
		str("path", "/checkout/complete")
		str("order_id", "ord-"+strconv.FormatUint(r.next()>>16, 36))
		num("amount", refCents(999+r.intn(49000)))
		str("currency", refOneOf(&r, currency))
		num("items", strconv.FormatUint(1+r.intn(5), 10))
	}
	ev.rng = r
	return ev
}

// appendJSON appends the event as a JSON object with the given timestamp,
// padded with a "pad" field to exactly size bytes when it is shorter.
func (ev refEvent) appendJSON(b []byte, ts time.Time, size int) []byte {
	start := len(b)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, ev.seq, 10)
	b = append(b, `,"user_id":`...)
	b = refAppendString(b, ev.userID)
	b = append(b, `,"event":`...)
	b = refAppendString(b, ev.name)
	b = append(b, `,"properties":{`...)
	for i, p := range ev.props[:ev.nprops] {
		if i > 0 {
			b = append(b, ',')
		}
		b = refAppendString(b, p.key)
		b = append(b, ':')
		if p.num {
			b = append(b, p.value...)
		} else {
			b = refAppendString(b, p.value)
		}
	}
	b = append(b, `},"timestamp":"`...)
	b = ts.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')

	const padField = `,"pad":""}`
	if n := size - (len(b) - start) - len(padField); n >= 0 {
		b = append(b, padField[:len(padField)-2]...)
		r := ev.rng
		b = r.appendText(b, n)
		b = append(b, `"`...)
	}
	return append(b, '}')
}

// refCents formats an amount in cents as a JSON number with two decimals.
func refCents(c uint64) string {
	frac := c % 100
	s := strconv.FormatUint(c/100, 10) + "."
	if frac < 10 {
		s += "0"
	}
	return s + strconv.FormatUint(frac, 10)
}

func refOneOf(r *rng, list []string) string { return list[r.intn(uint64(len(list)))] }

// refAppendString appends s as a JSON string. The generator's strings are
// plain ASCII; quotes, backslashes and control characters are escaped all
// the same.
func refAppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// TestEvent_SameAsModel checks the renderer against the model above: the
// same bytes for many seqs, seeds, user counts, sizes and timestamps
// (whole seconds, trailing zeros, nanoseconds, other years), and the same
// key.
func TestEvent_SameAsModel(t *testing.T) {
	stamps := []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1999, 7, 8, 9, 10, 11, 120, time.FixedZone("x", 3600)),
		time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	var st stamper // shared, as Read shares it: its memory must not leak into a stamp
	for _, seed := range []int64{42, -7, 1 << 40} {
		for _, users := range []uint64{1, 1000, 1 << 62} {
			for seq := uint64(1); seq <= 3000; seq++ {
				ts := stamps[seq%uint64(len(stamps))].Add(time.Duration(seq%3) * time.Second)
				size := []int{0, 100, 300, 1024}[seq%4]
				ev, ref := newEvent(seed, seq, users), refNewEvent(seed, seq, users)
				got := ev.appendJSONStamped([]byte("x"), st.stamp(ts), size)
				want := ref.appendJSON([]byte("x"), ts.UTC(), size)
				if !bytes.Equal(got, want) {
					t.Fatalf("seed %d, users %d, seq %d, size %d, %v:\n got %s\nwant %s", seed, users, seq, size, ts, got, want)
				}
				if key := ev.appendUserID(nil); string(key) != ref.userID {
					t.Fatalf("seed %d, users %d, seq %d: key %s, want %s", seed, users, seq, key, ref.userID)
				}
			}
		}
	}
}
