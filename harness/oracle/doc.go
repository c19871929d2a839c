// Package oracle reads the effects a system under test really produced, so
// the checkers can compare them with what the clients were told.
//
// The exported API:
//
//   - [Oracle]: Effects(ctx) returns every effect, attributed to a tenant
//     and an idempotency key (and an intent, when the system can tell).
//   - [Reference]: reads the reference service's tables (orders, ledger
//     entries, notifications, payment credits), after the outbox drains.
//   - [SQL]: a DSN and a query returning tenant, key and effect id per row.
//     Its DSN form (postgres:// URLs and key=value strings, one host or
//     several) is registered with the address gate.
//   - [HTTP]: a GET returning JSON, with small path expressions picking the
//     items and their tenant, key and id.
//   - [Net], [Option], [Through]: the way out of SQL's and HTTP's
//     connections (the harness passes its address gate; the default is
//     loopback only), every host of a DSN and every redirect hop checked
//     before a packet is sent.
package oracle
