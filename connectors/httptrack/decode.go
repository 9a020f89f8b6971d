package httptrack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// The message types of the Tracking API.
var messageTypes = map[string]bool{
	"track": true, "identify": true, "page": true, "screen": true, "group": true, "alias": true,
}

// maxMessageIDLen bounds messageId: it must be shorter than this.
const maxMessageIDLen = 100

// limits are the size limits the decoder enforces.
type limits struct {
	maxMessageBytes int // one message, as sent
	maxBatchBytes   int // one request body, decompressed
	maxBatchEvents  int // messages in one batch
}

// problem is one reason a request or a message is rejected; it is what a
// 400 answer lists.
type problem struct {
	// Index is the message's index in the batch; -1 for the request as a
	// whole. A single-message request's message has index 0.
	Index int `json:"index"`
	// Field is the field at fault, e.g. "event" or "context.ip"; empty when
	// no one field is.
	Field string `json:"field,omitempty"`
	// Code is a stable, machine-readable reason, e.g. "no_user_anon_id".
	Code string `json:"code"`
	// Message says what is wrong, naming the field and the message.
	Message string `json:"message"`
}

func (p problem) Error() string { return p.Message }

// requestProblem is a problem with the request as a whole.
func requestProblem(code, format string, args ...any) *problem {
	return &problem{Index: -1, Code: code, Message: fmt.Sprintf(format, args...)}
}

// envelope holds the request-level fields of a body.
type envelope struct {
	writeKey     string
	sentAt       time.Time // zero when absent
	context      object
	integrations object
}

// message is one validated message, ready for enrichment. Fields holds every
// top-level member except those the decoder interpreted and the enrichment
// rewrites.
type message struct {
	typ               string
	messageID         string // "" when absent
	userID            string // "" when absent
	anonymousID       string // "" when absent
	timestamp         time.Time
	originalTimestamp time.Time
	sentAt            time.Time
	rawTimestamp      json.RawMessage // the client's own timestamp, kept as originalTimestamp
	context           object
	integrations      object
	fields            object
}

// key is the message's partitioning key: userId, else anonymousId.
func (m *message) key() string {
	if m.userID != "" {
		return m.userID
	}
	return m.anonymousID
}

// decoded is a parsed request: its envelope and one entry per message, in
// order; for each, either the message or the problem with it.
type decoded struct {
	env      envelope
	msgs     []*message
	problems []problem // the rejected messages, by index
	total    int       // messages in the request, accepted or not
	arena    *arena    // backs the members of the messages; nil after release
}

// release returns the arena behind the messages to the pool: d.msgs and
// everything they hold must not be used afterwards (d.problems and d.env
// may).
func (d *decoded) release() {
	if d.arena != nil {
		putArena(d.arena)
		d.arena, d.msgs = nil, nil
	}
}

// decodeRequest parses and validates a request body. typ is the message
// type the path implies ("track", ...) or "" for /v1/batch and /v1/import.
// A problem with the request as a whole (not JSON, too large, too many
// messages, no batch) is returned as the error; problems with single
// messages of a batch are listed in decoded.problems and do not stop the
// others. The body must not be changed while the result is in use.
func decodeRequest(body []byte, typ string, lim limits) (*decoded, *problem) {
	if typ == "" && len(body) > lim.maxBatchBytes {
		return nil, requestProblem("request_too_large", "request body is %d bytes, more than the %d allowed for a batch", len(body), lim.maxBatchBytes)
	}
	if typ != "" && len(body) > lim.maxMessageBytes {
		return nil, requestProblem("message_too_large", "message is %d bytes, more than the %d allowed", len(body), lim.maxMessageBytes)
	}
	a := getArena()
	if !validIndexed(body, a) {
		putArena(a)
		var v any
		err := json.Unmarshal(body, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, requestProblem("invalid_json", "body is not a JSON object: %s", jsonErrorText(err))
	}
	d := &decoded{arena: a}
	top, err := scanMembersAt(a, body, 0)
	if err != nil {
		d.release()
		return nil, requestProblem("invalid_json", "body is not a JSON object: found %s", clip(bytes.TrimSpace(body)))
	}
	env, p := decodeEnvelope(a, &top, typ == "")
	if p != nil {
		d.release()
		return nil, p
	}
	d.env = env
	if typ != "" {
		d.total = 1
		m, p := decodeMessage(a, top, typ, -1, d.env, lim, len(body))
		if p != nil {
			d.problems = append(d.problems, *p)
		} else {
			d.msgs = append(a.ptrs[:0], m)
			a.ptrs = d.msgs
		}
		return d, nil
	}
	raw, off, ok := top.getAt("batch")
	if !ok || isNull(raw) {
		d.release()
		return nil, &problem{Index: -1, Field: "batch", Code: "missing_batch", Message: `body has no "batch": send {"batch":[...]} to /v1/batch`}
	}
	items, offs, err := scanElementsAt(a, raw, off)
	if err != nil {
		d.release()
		return nil, &problem{Index: -1, Field: "batch", Code: "invalid_batch", Message: `"batch" is not an array of messages`}
	}
	if len(items) == 0 {
		d.release()
		return nil, &problem{Index: -1, Field: "batch", Code: "empty_batch", Message: `"batch" is empty: send at least one message`}
	}
	if len(items) > lim.maxBatchEvents {
		d.release()
		return nil, &problem{Index: -1, Field: "batch", Code: "too_many_events", Message: fmt.Sprintf("batch has %d messages, more than the %d allowed", len(items), lim.maxBatchEvents)}
	}
	d.total = len(items)
	d.msgs = slices.Grow(a.ptrs[:0], len(items))
	for i, item := range items {
		off := -1
		if offs != nil {
			off = offs[i]
		}
		m, p := decodeItem(a, item, off, i, d.env, lim)
		if p != nil {
			d.problems = append(d.problems, *p)
			continue
		}
		d.msgs = append(d.msgs, m)
	}
	a.ptrs = d.msgs
	return d, nil
}

// decodeEnvelope reads and removes the request-level members of top:
// writeKey, sentAt and, for a batch, context and integrations (which merge
// into every message).
func decodeEnvelope(a *arena, top *object, isBatch bool) (envelope, *problem) {
	var env envelope
	if raw, ok := top.get("writeKey"); ok {
		top.del("writeKey") // a secret: never stored
		if !isNull(raw) {
			var ok bool
			if env.writeKey, ok = jsonString(raw); !ok {
				return env, &problem{Index: -1, Field: "writeKey", Code: "invalid_field", Message: `"writeKey" is not a string`}
			}
		}
	}
	if !isBatch {
		return env, nil // a single message keeps its own sentAt and context
	}
	if raw, ok := top.get("sentAt"); ok && !isNull(raw) {
		t, err := parseTime(raw)
		if err != nil {
			return env, &problem{Index: -1, Field: "sentAt", Code: "invalid_timestamp", Message: `"sentAt" of the batch ` + err.Error()}
		}
		env.sentAt = t
	}
	for _, f := range []struct {
		name string
		dst  *object
	}{{"context", &env.context}, {"integrations", &env.integrations}} {
		if raw, off, ok := top.getAt(f.name); ok && !isNull(raw) {
			m, err := scanMembersAt(a, raw, off)
			if err != nil {
				return env, &problem{Index: -1, Field: f.name, Code: "invalid_field", Message: fmt.Sprintf("%q of the batch is not an object", f.name)}
			}
			*f.dst = m
		}
	}
	return env, nil
}

// decodeItem validates the batch item at index i, at offset off of the
// indexed body (-1: not indexed).
func decodeItem(a *arena, raw json.RawMessage, off, i int, env envelope, lim limits) (*message, *problem) {
	if len(raw) > lim.maxMessageBytes {
		return nil, &problem{Index: i, Code: "message_too_large", Message: fmt.Sprintf("batch[%d] is %d bytes, more than the %d allowed per message", i, len(raw), lim.maxMessageBytes)}
	}
	fields, err := scanMembersAt(a, raw, off)
	if err != nil {
		return nil, &problem{Index: i, Code: "invalid_message", Message: fmt.Sprintf("batch[%d] is not a JSON object", i)}
	}
	fields.del("writeKey")
	rawType, ok := fields.get("type")
	if !ok || isNull(rawType) {
		return nil, &problem{Index: i, Field: "type", Code: "missing_type", Message: fmt.Sprintf(`batch[%d] has no "type" (one of track, identify, page, screen, group, alias)`, i)}
	}
	typ, ok := messageType(rawType)
	if !ok {
		return nil, &problem{Index: i, Field: "type", Code: "invalid_type", Message: fmt.Sprintf(`batch[%d] has "type" %s: want one of track, identify, page, screen, group, alias`, i, clip(rawType))}
	}
	return decodeMessage(a, fields, typ, i, env, lim, len(raw))
}

// messageType returns the type a JSON string names, without allocating.
func messageType(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	switch string(raw[1 : len(raw)-1]) {
	case "track":
		return "track", true
	case "identify":
		return "identify", true
	case "page":
		return "page", true
	case "screen":
		return "screen", true
	case "group":
		return "group", true
	case "alias":
		return "alias", true
	}
	// An escaped spelling ("\u0074rack") is still a valid name.
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil || !messageTypes[typ] {
		return "", false
	}
	return typ, true
}

// decodeMessage validates the members of one message of type typ and takes
// the ones enrichment rewrites out of fields. i is the message's index in
// its batch, or -1 for a single message.
func decodeMessage(a *arena, fields object, typ string, i int, env envelope, lim limits, size int) (*message, *problem) {
	bad := func(field, code, format string, args ...any) *problem {
		where, index := typ+" message", 0
		if i >= 0 {
			where, index = fmt.Sprintf("batch[%d]", i), i
		}
		return &problem{Index: index, Field: field, Code: code, Message: where + " " + fmt.Sprintf(format, args...)}
	}
	if size > lim.maxMessageBytes {
		return nil, bad("", "message_too_large", "is %d bytes, more than the %d allowed per message", size, lim.maxMessageBytes)
	}
	m := a.newMessage()
	m.typ = typ
	fields.del("type")

	var p *problem
	id := func(name string) string {
		raw, ok := fields.get(name)
		if !ok || p != nil {
			return ""
		}
		fields.del(name)
		if isNull(raw) {
			return ""
		}
		s, ok := idString(raw)
		if !ok {
			p = bad(name, "invalid_field", "has %q %s: want a string or a number", name, clip(raw))
		}
		return s
	}
	m.userID = id("userId")
	m.anonymousID = id("anonymousId")
	if p != nil {
		return nil, p
	}
	if m.userID == "" && m.anonymousID == "" {
		return nil, bad("userId", "no_user_anon_id", `has neither "userId" nor "anonymousId": set one of them`)
	}
	if raw, ok := fields.get("messageId"); ok {
		fields.del("messageId")
		if !isNull(raw) {
			var ok bool
			if m.messageID, ok = jsonString(raw); !ok {
				return nil, bad("messageId", "invalid_field", `has "messageId" %s: want a string`, clip(raw))
			}
			if utf8.RuneCountInString(m.messageID) >= maxMessageIDLen {
				return nil, bad("messageId", "message_id_too_long", `has a "messageId" of %d characters: it must be shorter than %d`, utf8.RuneCountInString(m.messageID), maxMessageIDLen)
			}
		}
	}
	// Required fields per type, checked to be non-empty and of the right kind.
	need := func(name, code string) {
		if p != nil {
			return
		}
		raw, ok := fields.get(name)
		if !ok || isNull(raw) {
			p = bad(name, code, "is a %s without %q", typ, name)
			return
		}
		if s, ok := idString(raw); !ok || s == "" {
			p = bad(name, "invalid_field", "has %q %s: want a non-empty string", name, clip(raw))
		}
	}
	switch typ {
	case "track":
		need("event", "missing_event")
		if ev, _ := fields.get("event"); p == nil && raw(ev)[0] != '"' {
			p = bad("event", "invalid_field", `has "event" %s: want a non-empty string`, clip(ev))
		}
	case "group":
		need("groupId", "missing_group_id")
	case "alias":
		need("previousId", "missing_previous_id")
		if p == nil && m.userID == "" {
			p = bad("userId", "missing_user_id", `is an alias without "userId"`)
		}
	}
	if p != nil {
		return nil, p
	}
	for _, name := range []string{"properties", "traits"} {
		if raw, ok := fields.get(name); ok && !isNull(raw) && raw[0] != '{' {
			return nil, bad(name, "invalid_field", "has %q %s: want an object", name, clip(raw))
		}
	}
	times := []struct {
		name string
		dst  *time.Time
	}{{"timestamp", &m.timestamp}, {"originalTimestamp", &m.originalTimestamp}, {"sentAt", &m.sentAt}}
	for _, f := range times {
		raw, ok := fields.get(f.name)
		if !ok {
			continue
		}
		fields.del(f.name)
		if isNull(raw) {
			continue
		}
		t, err := parseTime(raw)
		if err != nil {
			return nil, bad(f.name, "invalid_timestamp", "has %q %s", f.name, err.Error())
		}
		*f.dst = t
		if f.name == "originalTimestamp" || (f.name == "timestamp" && m.rawTimestamp == nil) {
			m.rawTimestamp = raw
		}
	}
	if m.sentAt.IsZero() {
		m.sentAt = env.sentAt
	}
	var err error
	ctx, ctxOff, _ := fields.getAt("context")
	if m.context, err = mergeObject(a, env.context, ctx, ctxOff); err != nil {
		return nil, bad("context", "invalid_field", `has "context" %s: want an object`, clip(ctx))
	}
	fields.del("context")
	integ, integOff, _ := fields.getAt("integrations")
	if m.integrations, err = mergeObject(a, env.integrations, integ, integOff); err != nil {
		return nil, bad("integrations", "invalid_field", `has "integrations" %s: want an object`, clip(integ))
	}
	fields.del("integrations")
	m.fields = fields
	return m, nil
}

// raw returns b, or a one-byte placeholder when b is empty, so callers may
// look at its first byte.
func raw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("?")
	}
	return b
}

// mergeObject returns the members of the object item (at offset off of
// the indexed body, -1: not indexed) over those of base (item's win). item
// may be absent or null; it fails when item is not an object.
func mergeObject(a *arena, base object, item json.RawMessage, off int) (object, error) {
	var own object
	if len(item) > 0 && !isNull(item) {
		if item[0] != '{' {
			return nil, fmt.Errorf("not an object")
		}
		var err error
		if own, err = scanMembersAt(a, item, off); err != nil {
			return nil, err
		}
	}
	if len(base) == 0 {
		return own, nil
	}
	out := make(object, 0, len(base)+len(own))
	out = append(out, own...)
	for _, m := range base {
		if _, ok := own.get(m.name); !ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// idString returns a JSON string or number as a string; Segment accepts
// numeric user ids and turns them into strings.
func idString(raw json.RawMessage) (string, bool) {
	switch {
	case len(raw) == 0:
		return "", false
	case raw[0] == '"':
		return jsonString(raw)
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		return string(raw), true
	}
	return "", false
}

// parseTime parses an ISO-8601 timestamp as the SDKs send it.
func parseTime(raw json.RawMessage) (time.Time, error) {
	s, ok := jsonString(raw)
	if !ok {
		return time.Time{}, fmt.Errorf("%s is not an ISO-8601 string", clip(raw))
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s is not an ISO-8601 time such as 2026-01-02T15:04:05.000Z", clip(raw))
}

// jsonString returns the string a JSON string literal stands for.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	s, err := unquote(raw)
	if err != nil {
		return "", false
	}
	return s, true
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// clip returns raw JSON for an error message, cut to a readable length.
func clip(raw json.RawMessage) string {
	const n = 40
	if len(raw) <= n {
		return string(raw)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return string(raw[:cut]) + "..."
}

// jsonErrorText makes a json error readable for a client.
func jsonErrorText(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return "found a JSON " + te.Value
	}
	return err.Error()
}

// enriched is a message turned into a record value.
type enriched struct {
	key       string
	value     []byte
	timestamp time.Time
	messageID string
	generated bool // messageId was generated by the server
}

// timeLayout is how the source writes times: Segment's millisecond ISO-8601.
const timeLayout = "2006-01-02T15:04:05.000Z"

// stamps caches the text of the times the messages of one request share:
// receivedAt, and the batch's sentAt. It also hands out the buffers of
// their record values from one slab per request.
type stamps struct {
	received     time.Time // UTC, truncated to milliseconds as the text shows it
	receivedText []byte
	sent         time.Time
	sentText     []byte // nil until a sentAt is formatted

	slab     []byte // values are cut from its free capacity
	slabSize int    // size of a new slab; 0: one buffer per value
}

// newStamps returns the stamps of a request received at receivedAt whose
// record values take about valueBytes in all (0 when unknown).
func newStamps(receivedAt time.Time, valueBytes int) *stamps {
	r := receivedAt.UTC().Truncate(time.Millisecond)
	return &stamps{received: r, receivedText: appendTime(make([]byte, 0, len(timeLayout)), r), slabSize: valueBytes}
}

// sentAtText returns t as text, formatting it only when it differs from
// the last one.
func (st *stamps) sentAtText(t time.Time) []byte {
	if st.sentText == nil || !t.Equal(st.sent) {
		st.sent = t
		st.sentText = appendTime(st.sentText[:0], t)
	}
	return st.sentText
}

// valueBuf returns an empty buffer for a value of about size bytes, from
// the slab when it has room.
func (st *stamps) valueBuf(size int) []byte {
	if cap(st.slab)-len(st.slab) < size {
		if st.slabSize < 2*size {
			return make([]byte, 0, size)
		}
		st.slab = make([]byte, 0, st.slabSize)
	}
	n := len(st.slab)
	return st.slab[n:n]
}

// keep returns the finished value b, capped so that appending to it never
// writes into the next value, and takes it off the slab when it was cut
// from there.
func (st *stamps) keep(b []byte) []byte {
	b = b[:len(b):len(b)]
	n := len(st.slab)
	if len(b) > 0 && len(b) <= cap(st.slab)-n && &b[0] == &st.slab[n : n+1][0] {
		st.slab = st.slab[:n+len(b)]
	}
	return b
}

// appendTime appends t in UTC as timeLayout does, without parsing the
// layout.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-')
	b = append(b, byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T')
	b = append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.')
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// enrichStamped completes a message as Segment does: it generates a
// missing messageId, sets receivedAt (st's), fills context.ip when the
// client did not, keeps the client's timestamp as originalTimestamp and
// sets timestamp to receivedAt - (sentAt - originalTimestamp), correcting
// the device's clock skew. It returns the record value: a JSON object with
// the known fields first (type, messageId, userId, anonymousId, ...), then
// the others by name, in a buffer from st.
func enrichStamped(m *message, st *stamps, ip string, newID func() string) enriched {
	receivedAt := st.received
	e := enriched{key: m.key(), messageID: m.messageID}
	if e.messageID == "" {
		e.messageID = newID()
		e.generated = true
	}
	orig := m.originalTimestamp
	if orig.IsZero() {
		orig = m.timestamp
	}
	switch {
	case !orig.IsZero() && !m.sentAt.IsZero():
		e.timestamp = receivedAt.Add(-m.sentAt.Sub(orig))
	case !orig.IsZero():
		e.timestamp = orig
	default:
		e.timestamp = receivedAt
	}
	e.timestamp = e.timestamp.UTC()

	size := 256 + len(m.messageID) + len(m.userID) + len(m.anonymousID)
	for _, o := range [...]object{m.fields, m.context, m.integrations} {
		for _, f := range o {
			size += len(f.name) + len(f.value) + 4
		}
	}
	b := st.valueBuf(size)
	b = append(b, `{"type":`...)
	b = appendString(b, m.typ)
	b = append(b, `,"messageId":`...)
	b = appendString(b, e.messageID)
	if m.userID != "" {
		b = append(b, `,"userId":`...)
		b = appendString(b, m.userID)
	}
	if m.anonymousID != "" {
		b = append(b, `,"anonymousId":`...)
		b = appendString(b, m.anonymousID)
	}
	for _, name := range [...]string{"event", "name", "groupId", "previousId", "properties", "traits"} {
		if v, ok := m.fields.get(name); ok {
			b = appendMember(b, member{name: name, value: v, plain: true})
		}
	}
	b = append(b, `,"context":{`...)
	m.context.sortByName()
	hasIP := false
	for i, f := range m.context {
		if f.name == "ip" {
			hasIP = true
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendName(b, f)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	if !hasIP && ip != "" {
		if len(m.context) > 0 {
			b = append(b, ',')
		}
		b = append(b, `"ip":`...)
		b = appendString(b, ip)
	}
	b = append(b, '}')
	if m.integrations != nil {
		b = append(b, `,"integrations":{`...)
		m.integrations.sortByName()
		for i, f := range m.integrations {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendName(b, f)
			b = append(b, ':')
			b = append(b, f.value...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"timestamp":"`...)
	b = appendTime(b, e.timestamp)
	b = append(b, '"')
	if m.rawTimestamp != nil {
		b = appendMember(b, member{name: "originalTimestamp", value: m.rawTimestamp, plain: true})
	}
	if !m.sentAt.IsZero() {
		b = append(b, `,"sentAt":"`...)
		b = append(b, st.sentAtText(m.sentAt)...)
		b = append(b, '"')
	}
	b = append(b, `,"receivedAt":"`...)
	b = append(b, st.receivedText...)
	b = append(b, '"')
	m.fields.sortByName()
	for _, f := range m.fields {
		switch f.name {
		case "event", "name", "groupId", "previousId", "properties", "traits":
			continue
		}
		b = appendMember(b, f)
	}
	e.value = st.keep(append(b, '}'))
	return e
}

// appendMember appends ,"name":value.
func appendMember(b []byte, f member) []byte {
	b = append(b, ',')
	b = appendName(b, f)
	b = append(b, ':')
	return append(b, f.value...)
}

// appendName appends the member's name as a JSON string.
func appendName(b []byte, f member) []byte {
	if !f.plain {
		return appendString(b, f.name)
	}
	b = append(b, '"')
	b = append(b, f.name...)
	return append(b, '"')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
