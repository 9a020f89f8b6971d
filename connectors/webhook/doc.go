// Package webhook is a sink that delivers log records over HTTP: to a CRM or
// CDP batch endpoint (HubSpot, Salesforce), or to any webhook receiver.
//
// # Requests
//
// Each record (or, with batch.size > 1, each batch of records) becomes one
// request. The method, the URL, the header values and the body are Go
// text/template templates over the record: .Value and .Key (decoded from
// JSON, numbers kept exact; text that is not JSON is a string), .Headers
// (the record headers, last value per name), .Topic, .Partition, .Offset,
// .Timestamp, .ID (the delivery id) and .Tombstone, with the helpers of
// funcs.go (json, default, get, lower, upper, trim, replace, join,
// pathEscape, str). A JSON null prints as an empty string and is false in
// {{if}}; a missing field is an error that dead-letters the record (use get
// for optional fields). The default body is the record value: as it is when
// it is JSON, else as a JSON string.
//
// In batch mode the records whose method, URL and headers render the same
// go into one request of up to batch.size records, at most one per key;
// the body is the JSON array of the records' bodies, or batch.body, a
// template over .Items (those bodies), .Records and .ID.
//
// # Delivery
//
// Write returns only when every record of its batch is delivered (any 2xx)
// or has failed for good, so the worker commits the group offsets only past
// records that are done. Records of one key (topic and key) are delivered in
// log order, each request waiting until the one before is delivered; when
// one fails, the later records of its key are held back (see below), so a
// receiver never gets a key's record after an earlier one it did not get.
// Records of different keys, and records without a key, go concurrently, up
// to concurrency requests in flight, at most rate.limit requests per second.
//
// Connection errors, timeouts, 408, 429, 5xx (and retry.statuses) are
// retried with exponential backoff and full jitter, waiting at least what a
// Retry-After says; a 429 or 503 with Retry-After holds back every request
// of the sink until then. Any other answer (3xx, which is not followed, and
// 4xx) fails the record at once, with an error marked connect.Permanent
// (as a template that fails on the record does): sent again, it would get
// the same answer, so without error tolerance the task stays FAILED. After
// max.attempts attempts or max.elapsed time the record fails with the last
// error, not marked: the receiver may recover. A failed record's error says
// how many requests were made for it (connect.WithAttempts), so that the
// __connect.errors.attempts header of its dead letter counts them. A 410
// Gone, a 401 while the headers are static (the same credentials on every
// request), a TLS certificate the sink does not trust, or a receiver that
// wants a client certificate (tls.cert, tls.key) or refuses the one given,
// fails the task instead: nothing would get through. A status listed in
// retry.statuses is retried whatever these rules say of it: the user knows
// the receiver.
//
// A stop (stop, delete, restart, or a worker's shutdown) lets requests to a
// receiver that answers finish, but does not wait for one that fails:
// retries, their waits, a Retry-After hold, a wait for a rate.limit slot,
// and every request while the receiver is failing end at once
// (connect.Stopping). The batch is then not committed, and is
// delivered again when the connector runs again.
//
// # Failed records and the ack contract
//
// Inside one Write the records of different keys are delivered
// concurrently, so a failure can come after later records were delivered.
// Write therefore first delivers everything it can, then reports the first
// failed record with connect.BadRecordAt, so that every record before it is
// delivered as the contract says. The later records of a failed record's
// key are not sent: they stay pending. The worker dead-letters the failed
// record and calls Write again with the rest (with errors.tolerance none
// the task fails instead, and its next run starts again at the failed
// record); the sink remembers the outcome of each record of the batch,
// recognizes the rest (a suffix of the batch, by topic, partition and
// offset), skips those already delivered, sends those it held back once no
// failed record of their key comes before them, and reports the next
// failure at once, so that nothing is sent twice.
//
// # Signing and idempotency
//
// With signing.secret, requests carry the Standard Webhooks headers
// webhook-id, webhook-timestamp (of this attempt) and webhook-signature
// (v1,<base64 HMAC-SHA256 of "id.timestamp.body">). The id is the same on
// every attempt: msg_<topic>_<partition>_<offset> for one record, msg_b<hash
// of the records' topics, partitions and offsets> for a batch, where each
// record was read (before a sink-side route merged topics). It is also
// sent in idempotency.header (Idempotency-Key), so a receiver can drop
// redeliveries after a crash.
//
// # Secrets
//
// Secret values never show in errors, dead-letter headers or reports: the
// signing secrets, the values of headers that carry credentials
// (Authorization, Cookie, names with key, token, secret, auth, password,
// signature), the password and credential-like query parameters of the url
// (hapikey, api_key, token, ...), and the values of environment variables
// (8 bytes or longer) that occur in the settings, which is how ${VAR}
// secrets of a pipeline arrive. They are replaced by connect.Masked, also
// in response bodies that echo them. The spec's Redact masks the same
// header credentials and url parts where the worker shows the settings (the
// REST API: "Authorization: Bearer ********", "?hapikey=********").
package webhook
