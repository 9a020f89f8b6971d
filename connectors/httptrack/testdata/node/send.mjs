// send.mjs posts events to the httptrack source with @segment/analytics-node:
// track, identify and page one request each, then a batch of BATCH tracks
// in one request. It prints {"delivered":N,"failed":M} and exits 1 when an
// event was not delivered. Env: HOST (http://127.0.0.1:PORT), WRITE_KEY, BATCH.
import { Analytics } from '@segment/analytics-node'

const host = process.env.HOST
const writeKey = process.env.WRITE_KEY
const batch = Number(process.env.BATCH ?? '1000')

let delivered = 0
let failed = 0
const errors = []

async function send(client, calls) {
  const done = calls.map(
    (call) =>
      new Promise((resolve) =>
        call((err) => {
          if (err) {
            failed++
            errors.push(String(err.reason ?? err.message ?? err))
          } else {
            delivered++
          }
          resolve()
        })
      )
  )
  await Promise.all(done)
  await client.closeAndFlush({ timeout: 60000 })
}

// One request per call.
const single = new Analytics({ writeKey, host, flushAt: 1, flushInterval: 50 })
single.on('error', (err) => errors.push('emitter: ' + String(err?.reason ?? err?.code ?? err)))
await send(single, [
  (cb) => single.track({ userId: 'user-1', event: 'Order Completed', properties: { revenue: 42.5, currency: 'EUR', items: [{ sku: 'a-1', qty: 2 }] }, timestamp: new Date('2026-01-02T03:04:05.678Z') }, cb),
  (cb) => single.identify({ userId: 'user-1', traits: { email: 'u1@example.com', plan: 'pro' } }, cb),
  (cb) => single.page({ anonymousId: 'anon-7', category: 'Docs', name: 'Pricing', properties: { path: '/pricing' } }, cb),
])

// One batch request of `batch` events.
const many = new Analytics({ writeKey, host, flushAt: batch, flushInterval: 60000 })
many.on('error', (err) => errors.push('emitter: ' + String(err?.reason ?? err?.code ?? err)))
const calls = []
for (let i = 0; i < batch; i++) {
  calls.push((cb) => many.track({ userId: `user-${i % 10}`, event: 'Batch Event', properties: { i } }, cb))
}
await send(many, calls)

console.log(JSON.stringify({ delivered, failed, errors: errors.slice(0, 5) }))
process.exit(failed === 0 ? 0 : 1)
