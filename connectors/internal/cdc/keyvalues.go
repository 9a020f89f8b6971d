package cdc

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// KeyValues is the key of a row in a snapshot's position, one value per key
// column as the server sends it in text: UTF-8 for character columns, but
// the bytes themselves for binary strings (MySQL's BINARY(16) UUIDs, BIT)
// or a PostgreSQL SQL_ASCII database's text. In JSON it is an array of
// strings when every value is UTF-8, which JSON keeps exactly (and is how
// positions of earlier versions stored every key), else {"base64":[…]},
// every value base64 (standard, padded): a JSON string cannot hold other
// bytes, and the encoder would replace them with U+FFFD, so that a restart
// resumed after another key. An earlier version fails on the object
// rather than resume at the wrong row.
type KeyValues []string

// MarshalJSON implements json.Marshaler.
func (k KeyValues) MarshalJSON() ([]byte, error) {
	text := true
	for _, v := range k {
		if !utf8.ValidString(v) {
			text = false
			break
		}
	}
	if text {
		return json.Marshal([]string(k))
	}
	enc := make([]string, len(k))
	for i, v := range k {
		enc[i] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return json.Marshal(struct {
		Base64 []string `json:"base64"`
	}{enc})
}

// UnmarshalJSON implements json.Unmarshaler.
func (k *KeyValues) UnmarshalJSON(b []byte) error {
	var text []string
	if err := json.Unmarshal(b, &text); err == nil {
		*k = text
		return nil
	}
	var bin struct {
		Base64 []string `json:"base64"`
	}
	if err := json.Unmarshal(b, &bin); err != nil || bin.Base64 == nil {
		s := string(b)
		if len(s) > 80 {
			s = s[:80] + "…"
		}
		return fmt.Errorf("a key is an array of strings or {\"base64\":[…]}, not %s", s)
	}
	out := make(KeyValues, len(bin.Base64))
	for i, v := range bin.Base64 {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("key value %q is not base64: %w", v, err)
		}
		out[i] = string(raw)
	}
	*k = out
	return nil
}
