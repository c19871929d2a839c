// Package foreign is a corpus of small order services written the way other
// teams write them, independently of idemchaos's reference service and of
// its checkers: the evidence that idemchaos judges services it did not
// write correctly. Each sub-package is one team's service, in its own style,
// sharing no idempotency code with the others:
//
//   - ledger: tenant in the JSON body, an in-memory store behind a mutex
//     with a TTL, 201 + Location on create, 409 + Retry-After in flight,
//     422 on reuse (byte-for-byte fingerprint), GET /admin/orders.
//   - shopfront: tenant in an X-Account header, a sync.Map store, 200 on
//     create, in-flight duplicates wait for the first and get its answer,
//     400 on reuse (canonical-JSON fingerprint), keys optional, GET /effects.
//   - accounts: tenant in the path (/accounts/{id}/orders), a real Postgres
//     table, 201, 409 in flight, 417 on reuse (jsonb equality), 428 without
//     a key; the orders table is the effects oracle.
//
// Each has flags that turn it into a flawed variant with one realistic bug
// (the kind found in published idempotency libraries). cmd/foreignsvc
// serves any of them by name; corpus lists every service with its scenario
// and the verdict idemchaos must reach; foreign_test.go runs them all as
// real processes on loopback.
package foreign
