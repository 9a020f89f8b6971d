package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	tlog "github.com/tributary-io/tributary/log"
)

// recordFormatter renders one consumed record as kcat -C does.
type recordFormatter interface {
	appendRecord(dst []byte, r *tlog.Record) []byte
}

// fmtToken is one piece of a -f format: literal text or a field.
type fmtToken struct {
	field byte // 0 for literal text, else the letter after %
	text  []byte
}

// textFormatter renders records with a kcat -f format string.
type textFormatter struct {
	tokens  []fmtToken
	nullStr []byte // printed for empty or null keys and values (-Z); nil prints nothing
}

const fmtFields = "%s %S %k %K %t %p %o %T %h %%"

// parseFormat parses a kcat -f format: %s value, %S value size (-1 for
// null), %k key, %K key size (-1 for null), %t topic, %p partition, %o
// offset, %T timestamp (ms), %h headers (name=value,...), %% a percent
// sign; \n \t \r \\ and \xHH escapes.
func parseFormat(f string) (*textFormatter, error) {
	var toks []fmtToken
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			toks = append(toks, fmtToken{text: lit})
			lit = nil
		}
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch c {
		case '%':
			if i+1 >= len(f) {
				return nil, fmt.Errorf("format %q ends with a lone %%; valid fields: %s", f, fmtFields)
			}
			i++
			switch f[i] {
			case '%':
				lit = append(lit, '%')
			case 's', 'S', 'k', 'K', 't', 'p', 'o', 'T', 'h':
				flush()
				toks = append(toks, fmtToken{field: f[i]})
			default:
				return nil, fmt.Errorf("format %q: unsupported field %%%c; valid fields: %s", f, f[i], fmtFields)
			}
		case '\\':
			if i+1 >= len(f) {
				lit = append(lit, c)
				continue
			}
			i++
			switch f[i] {
			case 'n':
				lit = append(lit, '\n')
			case 't':
				lit = append(lit, '\t')
			case 'r':
				lit = append(lit, '\r')
			case 'x':
				if i+2 < len(f) {
					if v, err := strconv.ParseUint(f[i+1:i+3], 16, 8); err == nil {
						lit = append(lit, byte(v))
						i += 2
						continue
					}
				}
				lit = append(lit, 'x')
			default:
				lit = append(lit, f[i])
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return &textFormatter{tokens: toks}, nil
}

func (t *textFormatter) appendRecord(dst []byte, r *tlog.Record) []byte {
	for _, tok := range t.tokens {
		switch tok.field {
		case 0:
			dst = append(dst, tok.text...)
		case 's':
			dst = t.appendBytes(dst, r.Value)
		case 'S':
			dst = strconv.AppendInt(dst, sizeOrNull(r.Value), 10)
		case 'k':
			dst = t.appendBytes(dst, r.Key)
		case 'K':
			dst = strconv.AppendInt(dst, sizeOrNull(r.Key), 10)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				if h.Value == nil {
					dst = append(dst, "NULL"...)
				} else {
					dst = append(dst, h.Value...)
				}
			}
		}
	}
	return dst
}

// appendBytes writes a key or value; with -Z an empty or null one prints
// as NULL, as in kcat.
func (t *textFormatter) appendBytes(dst, b []byte) []byte {
	if len(b) == 0 && t.nullStr != nil {
		return append(dst, t.nullStr...)
	}
	return append(dst, b...)
}

func sizeOrNull(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// jsonFormatter renders records as kcat -J does: one JSON object a line.
// Like kcat it leaves "headers" out when a record has none.
type jsonFormatter struct {
	tstype string // "create" or "logappend"
	buf    bytes.Buffer
	enc    *json.Encoder
}

type jsonRecord struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	TsType    string  `json:"tstype"`
	Ts        int64   `json:"ts"`
	Headers   []any   `json:"headers,omitempty"`
	Key       *string `json:"key"`
	Payload   *string `json:"payload"`
}

func newJSONFormatter(tstype string) *jsonFormatter {
	f := &jsonFormatter{tstype: tstype}
	f.enc = json.NewEncoder(&f.buf)
	f.enc.SetEscapeHTML(false)
	return f
}

func (f *jsonFormatter) appendRecord(dst []byte, r *tlog.Record) []byte {
	jr := jsonRecord{
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		TsType: f.tstype, Ts: r.Timestamp.UnixMilli(),
		Key: stringOrNull(r.Key), Payload: stringOrNull(r.Value),
	}
	if len(r.Headers) > 0 {
		jr.Headers = make([]any, 0, 2*len(r.Headers))
		for _, h := range r.Headers {
			jr.Headers = append(jr.Headers, h.Key, stringOrNull(h.Value))
		}
	}
	f.buf.Reset()
	_ = f.enc.Encode(&jr) // cannot fail: strings and numbers only
	return append(dst, f.buf.Bytes()...)
}

func stringOrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}
