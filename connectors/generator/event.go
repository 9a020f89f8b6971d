package generator

import (
	"strconv"
	"time"
)

// event is the content of one generated event: everything but its
// timestamp, derived from (seed, seq) alone by newEvent.
type event struct {
	seq    uint64
	userID string
	name   string
	props  [maxProps]prop // in output order, the first nprops of them
	nprops int
	rng    rng // continues the event's stream, for padding
}

// maxProps is the most properties an event has (a purchase).
const maxProps = 5

// prop is one event property; a value is a string, or a JSON number when
// num is set.
type prop struct {
	key, value string
	num        bool
}

// eventKinds are the event names with their weights, out of 100.
var eventKinds = []struct {
	name   string
	weight uint64
}{
	{"page_view", 50},
	{"click", 20},
	{"search", 10},
	{"add_to_cart", 10},
	{"signup", 5},
	{"purchase", 5},
}

var (
	paths = []string{
		"/", "/pricing", "/docs", "/docs/getting-started", "/docs/connectors",
		"/blog", "/blog/launch-week", "/about", "/careers", "/contact",
		"/products", "/features", "/integrations", "/customers", "/changelog",
	}
	referrers = []string{
		"", "", "https://www.google.com/", "https://www.google.com/",
		"https://news.ycombinator.com/", "https://twitter.com/",
		"https://www.linkedin.com/", "https://github.com/", "https://duckduckgo.com/",
	}
	elements = []string{"signup-button", "pricing-toggle", "nav-docs", "cta-demo", "footer-github", "search-box"}
	queries  = []string{"postgres cdc", "kafka connect", "iceberg sink", "pricing", "webhooks", "exactly once", "mysql binlog"}
	plans    = []string{"free", "free", "free", "pro", "pro", "team"}
	currency = []string{"USD", "USD", "USD", "EUR", "EUR", "GBP"}
)

// newEvent derives the event with the given seq from the seed: the same
// (seed, seq) always gives the same event.
func newEvent(seed int64, seq, users uint64) event {
	r := newRNG(seed, seq)
	ev := event{seq: seq, userID: "user-" + strconv.FormatUint(1+r.intn(users), 10)}

	pick := r.intn(100)
	for _, k := range eventKinds {
		if pick < k.weight {
			ev.name = k.name
			break
		}
		pick -= k.weight
	}
	str := func(k, v string) { ev.props[ev.nprops] = prop{key: k, value: v}; ev.nprops++ }
	num := func(k, v string) { ev.props[ev.nprops] = prop{key: k, value: v, num: true}; ev.nprops++ }
	switch ev.name {
	case "page_view":
		str("path", oneOf(&r, paths))
		str("referrer", oneOf(&r, referrers))
	case "click":
		str("path", oneOf(&r, paths))
		str("element", oneOf(&r, elements))
	case "search":
		str("path", "/search")
		str("query", oneOf(&r, queries))
	case "add_to_cart":
		sku := "sku-" + strconv.FormatUint(1001+r.intn(50), 10)
		str("path", "/products/"+sku)
		str("product_id", sku)
		num("price", cents(500+r.intn(19500)))
		num("quantity", strconv.FormatUint(1+r.intn(3), 10))
	case "signup":
		str("path", "/signup")
		str("plan", oneOf(&r, plans))
		str("referrer", oneOf(&r, referrers))
	case "purchase":
		str("path", "/checkout/complete")
		str("order_id", "ord-"+strconv.FormatUint(r.next()>>16, 36))
		num("amount", cents(999+r.intn(49000)))
		str("currency", oneOf(&r, currency))
		num("items", strconv.FormatUint(1+r.intn(5), 10))
	}
	ev.rng = r
	return ev
}

// appendJSON appends the event as a JSON object with the given timestamp,
// padded with a "pad" field to exactly size bytes when it is shorter.
func (ev event) appendJSON(b []byte, ts time.Time, size int) []byte {
	start := len(b)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, ev.seq, 10)
	b = append(b, `,"user_id":`...)
	b = appendString(b, ev.userID)
	b = append(b, `,"event":`...)
	b = appendString(b, ev.name)
	b = append(b, `,"properties":{`...)
	for i, p := range ev.props[:ev.nprops] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p.key)
		b = append(b, ':')
		if p.num {
			b = append(b, p.value...)
		} else {
			b = appendString(b, p.value)
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

// cents formats an amount in cents as a JSON number with two decimals.
func cents(c uint64) string {
	frac := c % 100
	s := strconv.FormatUint(c/100, 10) + "."
	if frac < 10 {
		s += "0"
	}
	return s + strconv.FormatUint(frac, 10)
}

func oneOf(r *rng, list []string) string { return list[r.intn(uint64(len(list)))] }

// appendString appends s as a JSON string. The generator's strings are
// plain ASCII; quotes, backslashes and control characters are escaped all
// the same.
func appendString(b []byte, s string) []byte {
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
