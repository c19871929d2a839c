// Package oracle reads the effects a system under test really produced, so
// the checkers can compare them with what the clients were told.
//
// The exported API:
//
//   - [Oracle]: Effects(ctx) returns every effect, attributed to a tenant
//     and an idempotency key (and an intent, when the system can tell).
//   - [Reference]: reads the reference service's tables (orders, ledger
//     entries, notifications, payment credits), after the outbox drains.
//   - [SQL]: a DSN and a query returning tenant, key and effect id per row,
//     through database/sql with the [Driver] the DSN's scheme names;
//     [RegisterDriver] (Postgres is registered here, MySQL/MariaDB by
//     harness/oracle/mysql, SQLite by harness/oracle/sqlite; each driver's
//     DSN form is registered with the address gate), [Endpoint],
//     [DSNEndpoints].
//   - [HTTP], [HTTPConfig], [Tenant], [PerTenant]: a GET returning JSON,
//     JSONPath expressions picking the items and their tenant, key and id;
//     read once per tenant when its URL or headers name {{tenant}} or
//     {{token}}, every page followed with a next-page expression.
//   - [Net], [Option], [Through]: the way out of SQL's and HTTP's
//     connections (the harness passes its address gate; the default is
//     loopback only), every host of a DSN and every redirect hop checked
//     before a packet is sent.
//   - [Read], [Reading]: one read, with where it read and what came back.
//   - [ResponseID]: the id a response body names.
package oracle
