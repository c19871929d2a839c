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
//     harness/oracle/mysql, SQLite by harness/oracle/sqlite), [DialFunc],
//     [Endpoint], [DSNEndpoints].
//   - [HTTP], [HTTPConfig], [Tenant], [PerTenant]: a GET returning JSON,
//     JSONPath expressions picking the items and their tenant, key and id;
//     read once per tenant when its URL or headers name {{tenant}} or
//     {{token}}, every page followed with a next-page expression.
//   - [ResponseID]: the id a response body names.
package oracle
