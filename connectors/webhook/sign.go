package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	headerWebhookID        = "Webhook-Id"
	headerWebhookTimestamp = "Webhook-Timestamp"
	headerWebhookSignature = "Webhook-Signature"
)

// signingKey returns the HMAC key of a Standard Webhooks secret: the
// base64 after "whsec_" (the prefix may be left out, as the reference
// libraries allow).
func signingKey(secret string) ([]byte, error) {
	b64 := strings.TrimPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, errors.New("not a Standard Webhooks secret: write whsec_ followed by the base64 of the key")
	}
	return key, nil
}

// signature returns the webhook-signature header value of a message: one
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per key, separated by
// spaces.
func signature(keys [][]byte, id string, timestamp int64, body []byte) string {
	var b strings.Builder
	ts := strconv.FormatInt(timestamp, 10)
	for i, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
