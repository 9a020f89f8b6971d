// Package httptrack is a source that speaks Segment's HTTP Tracking API, so
// that analytics SDKs (analytics.js, analytics-node, the mobile SDKs) can
// point their host at Tributary and change nothing else.
//
// # Requests
//
// POST /v1/track, /v1/identify, /v1/page, /v1/screen, /v1/group and
// /v1/alias take one message; /v1/batch (and /v1/import, its alias) take
// {"batch":[...],"writeKey","sentAt","context","integrations"}, whose
// context and integrations merge into every message. The browser SDK's
// short paths /v1/t, /i, /p, /s, /g, /a and /b work too, and JSON is parsed
// whatever the Content-Type (analytics.js sends text/plain). Bodies may be
// gzipped. GET /health answers {"status":"healthy"}; GET /metrics serves
// request, event, rejection and latency metrics per write key in the
// Prometheus format. The same counters, summed over the keys, and the
// backlog (requests pending, unacknowledged, waiting) go to the worker
// through connect.Reporter (report.go), which exports them on its own
// /metrics and shows them in the task status.
//
// The write key is the user of HTTP Basic auth (empty password) or
// "writeKey" in the body; a key in the header wins. An Authorization
// header of another scheme (a proxy's bearer token) holds no key: the
// body's is used, as without a header. A key may route its
// events to its own topic (write.keys item key:topic).
//
// # Records
//
// Every valid message becomes one record: the key is userId, else
// anonymousId, so that one user's events keep their order on one
// partition; the value is the message as JSON, enriched as Segment does
// (messageId generated when missing or empty, receivedAt, context.ip from
// the peer or the trusted proxy header when the client sent none, and timestamp =
// receivedAt - (sentAt - originalTimestamp), the client's own timestamp
// kept as originalTimestamp); the record timestamp is that corrected
// timestamp. The writeKey is never stored.
//
// # Acknowledgement
//
// A request is answered 200 only after its records are durably in the
// log. Each accepted request gets the next seq; the last record of a
// request carries the position {"seq":N}. With dedup on, Durable(N)
// (connect.DurableNotifier: the records are durable, the position not yet
// stored) releases every request up to N: a crash before the position
// store leaves the records in the log tail, which RecoverTail hands back,
// so a resend is dropped. With dedup off nothing drops a resend, and
// requests wait for Ack(N) (durable and stored). Ack(N) releases in both
// cases what Durable has not (the worker announces durability only when
// the tail recovery covers it). With dedup on nothing waits for Ack, and
// the source says so (connect.LazyAcker): the worker then stores positions
// once per position interval, not after each durable batch. A request that
// is not durable within ack.timeout, or
// that finds more than max.pending.bytes waiting, is answered 503 with
// Retry-After; the SDK retries it, and dedup keeps a retry of what did
// become durable from doubling it.
//
// Under load Read gathers (group commit): once the worker announces
// durability, a Read that finds requests while the records of the last
// Read are not durable yet waits until they are (at most
// maxGather), and returns every request that arrived meanwhile, so that
// one append and one fsync per partition cover them all. Those requests
// could not have been answered sooner: the fsyncs in flight do not cover
// them. An idle or lightly loaded source, or one whose worker never calls
// Durable, is read at once.
// Waiting requests wait in waves, one per Read: a Read seals the wave of
// the requests it takes, and a Durable wakes the requests it answers with
// one channel close per wave, leaving those queued for the next Read
// asleep; woken, they check the answered seq without taking the source's
// lock. When a
// Read waits to take the queue as that Durable comes, the close waits for
// the worker's next Read, so that the batch the waiting Read returns is
// appended (and its fsyncs started) before the answered requests and
// their clients compete for the CPU. Waiting requests carry no timer: a
// ticker (every ack.timeout/8) wakes them to check their ack.timeout.
//
// # Dedup
//
// A message whose messageId (per write key) arrived within dedup.window is
// dropped. The set is bounded (dedup.max.ids) and, with state.dir, kept
// across restarts in a journal whose entries are tagged with their request's
// seq: on Open only the entries up to the stored position are kept, because
// the others belong to requests whose clients got no 200 and will retry,
// and whose records may not have reached the log. See dedup.go for the file format.
//
// # Recovery of the log tail
//
// A crash between the worker's append and its position store leaves
// records in the log whose clients got no 200 and retry. The source
// implements connect.TailRecoverer (recover.go): before its first Read the
// worker hands it the records of its topics after the stored position, and
// their messageIds are remembered as durable, so the retries are dropped.
// Tracking requests wait for the first Read, so none slips in before.
package httptrack
