package generator

import (
	"strconv"
	"time"
)

// event is the content of one generated event: everything but its
// timestamp, derived from (seed, seq) alone by newEvent. It holds numbers
// and indexes into constant tables, no strings of its own, so that making
// one allocates nothing; appendJSON renders it.
type event struct {
	seq    uint64
	user   uint64 // user_id is "user-" and this number
	kind   int    // index into eventKinds
	props  [maxProps]prop
	nprops int
	rng    rng // continues the event's stream, for padding
}

// maxProps is the most properties an event has (a purchase).
const maxProps = 5

// prop is one event property: its key, written as `"key":`, and a value of
// some form.
type prop struct {
	key  string // quoted, with the colon
	form propForm
	text string // the quoted string of formText
	n    uint64 // the number of the other forms
}

// propForm says how a property's value is written.
type propForm uint8

const (
	formText    propForm = iota // text, already quoted
	formInt                     // n as a JSON number
	formCents                   // n cents as a JSON number with two decimals
	formSKU                     // "sku-<n>"
	formSKUPath                 // "/products/sku-<n>"
	formOrder                   // "ord-<n in base 36>"
)

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

// Indexes of eventKinds.
const (
	kindPageView = iota
	kindClick
	kindSearch
	kindAddToCart
	kindSignup
	kindPurchase
)

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

// The tables above as JSON strings, and the event names as the whole
// `"event":"name"` field: written as they are.
var (
	qPaths     = quoteAll(paths)
	qReferrers = quoteAll(referrers)
	qElements  = quoteAll(elements)
	qQueries   = quoteAll(queries)
	qPlans     = quoteAll(plans)
	qCurrency  = quoteAll(currency)
	qSearch    = string(appendString(nil, "/search"))
	qSignup    = string(appendString(nil, "/signup"))
	qCheckout  = string(appendString(nil, "/checkout/complete"))
	eventField = func() []string {
		out := make([]string, len(eventKinds))
		for i, k := range eventKinds {
			out[i] = string(appendString([]byte(`,"event":`), k.name))
		}
		return out
	}()
)

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(appendString(nil, s))
	}
	return out
}

// newEvent derives the event with the given seq from the seed: the same
// (seed, seq) always gives the same event.
func newEvent(seed int64, seq, users uint64) event {
	r := newRNG(seed, seq)
	ev := event{seq: seq, user: 1 + r.intn(users)}

	pick := r.intn(100)
	for i, k := range eventKinds {
		if pick < k.weight {
			ev.kind = i
			break
		}
		pick -= k.weight
	}
	text := func(k, v string) { ev.props[ev.nprops] = prop{key: k, text: v}; ev.nprops++ }
	num := func(k string, f propForm, n uint64) { ev.props[ev.nprops] = prop{key: k, form: f, n: n}; ev.nprops++ }
	switch ev.kind {
	case kindPageView:
		text(`"path":`, oneOf(&r, qPaths))
		text(`"referrer":`, oneOf(&r, qReferrers))
	case kindClick:
		text(`"path":`, oneOf(&r, qPaths))
		text(`"element":`, oneOf(&r, qElements))
	case kindSearch:
		text(`"path":`, qSearch)
		text(`"query":`, oneOf(&r, qQueries))
	case kindAddToCart:
		sku := 1001 + r.intn(50)
		num(`"path":`, formSKUPath, sku)
		num(`"product_id":`, formSKU, sku)
		num(`"price":`, formCents, 500+r.intn(19500))
		num(`"quantity":`, formInt, 1+r.intn(3))
	case kindSignup:
		text(`"path":`, qSignup)
		text(`"plan":`, oneOf(&r, qPlans))
		text(`"referrer":`, oneOf(&r, qReferrers))
	case kindPurchase:
		text(`"path":`, qCheckout)
		num(`"order_id":`, formOrder, r.next()>>16)
		num(`"amount":`, formCents, 999+r.intn(49000))
		text(`"currency":`, oneOf(&r, qCurrency))
		num(`"items":`, formInt, 1+r.intn(5))
	}
	ev.rng = r
	return ev
}

// appendUserID appends the event's user_id, its key.
func (ev *event) appendUserID(b []byte) []byte {
	return strconv.AppendUint(append(b, "user-"...), ev.user, 10)
}

// appendJSON appends the event as a JSON object with the given timestamp,
// padded with a "pad" field to exactly size bytes when it is shorter.
func (ev event) appendJSON(b []byte, ts time.Time, size int) []byte {
	var st stamper
	return ev.appendJSONStamped(b, st.stamp(ts), size)
}

// appendJSONStamped is appendJSON with the timestamp already formatted
// (by a stamper).
func (ev *event) appendJSONStamped(b []byte, stamp []byte, size int) []byte {
	start := len(b)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, ev.seq, 10)
	b = append(b, `,"user_id":"`...)
	b = ev.appendUserID(b)
	b = append(b, '"')
	b = append(b, eventField[ev.kind]...)
	b = append(b, `,"properties":{`...)
	for i := range ev.props[:ev.nprops] {
		p := &ev.props[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.key...)
		switch p.form {
		case formText:
			b = append(b, p.text...)
		case formInt:
			b = strconv.AppendUint(b, p.n, 10)
		case formCents:
			b = appendCents(b, p.n)
		case formSKU:
			b = append(strconv.AppendUint(append(b, `"sku-`...), p.n, 10), '"')
		case formSKUPath:
			b = append(strconv.AppendUint(append(b, `"/products/sku-`...), p.n, 10), '"')
		case formOrder:
			b = append(strconv.AppendUint(append(b, `"ord-`...), p.n, 36), '"')
		}
	}
	b = append(b, `},"timestamp":"`...)
	b = append(b, stamp...)
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

// appendCents appends an amount in cents as a JSON number with two
// decimals.
func appendCents(b []byte, c uint64) []byte {
	b = strconv.AppendUint(b, c/100, 10)
	frac := c % 100
	return append(b, '.', byte('0'+frac/10), byte('0'+frac%10))
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

// stamper formats timestamps as time.RFC3339Nano does in UTC
// ("2006-01-02T15:04:05.999999999Z"), remembering the last one and the
// date and time of its second: a batch's events share a timestamp (rate
// 0) or a second.
type stamper struct {
	last   time.Time
	buf    []byte // the stamp of last; valid when have is set
	sec    int64  // the Unix second of prefix
	prefix [len("2006-01-02T15:04:05")]byte
	have   bool // buf holds last's stamp, prefix sec's date and time
}

// stamp returns the stamp of t, valid until the next call.
func (s *stamper) stamp(t time.Time) []byte {
	t = t.UTC()
	if s.have && t.Equal(s.last) {
		return s.buf
	}
	if y := t.Year(); y < 0 || y > 9999 {
		s.have = false
		s.buf = t.AppendFormat(s.buf[:0], time.RFC3339Nano)
		return s.buf
	}
	if sec := t.Unix(); !s.have || sec != s.sec {
		t.AppendFormat(s.prefix[:0], "2006-01-02T15:04:05")
		s.sec = sec
	}
	b := append(s.buf[:0], s.prefix[:]...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte // the dot and nine digits, trailing zeros cut
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	s.buf = append(b, 'Z')
	s.last, s.have = t, true
	return s.buf
}
