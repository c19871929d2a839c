// Package ordersvc is a small idempotent order API on Postgres, written the
// way a team might write their own: it is what `idemchaos run --target`
// tests in the README's "Run against your own service", not a part of
// idemchaos and not a stand-in for the reference service.
//
//	POST /orders
//	Authorization: Bearer tok-<tenant>
//	Idempotency-Key: <key>
//	{"sku":"...","qty":1,"amount":100}
//
// The first request with a (tenant, key) creates an order and answers 201
// with {"id":N,"order":<the request body>}; a retry gets the same status
// and bytes; the same key with a different body gets 422; a duplicate that
// arrives while the first is still running gets 409 with Retry-After: 1.
//
// With [Options].Buggy it makes the classic mistake instead (look the key
// up, create the order, then record the key: no transaction, no unique
// constraint), which creates two orders when two copies of a request race.
//
// Exported API: [New], [Options].
package ordersvc
