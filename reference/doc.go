// Package reference is the reference idempotent service: a real HTTP
// service on Postgres (pgx) that does everything the seed articles require,
// meant to be read as the model answer, plus one switchable mutant per
// known pitfall, each a small commented deviation in the same code path
// (grep for "MUTANT").
//
// What it serves (see openapi.yaml beside this file):
//
//   - POST /v1/orders with an Idempotency-Key: the key record is scoped
//     (tenant, method+route, key), claimed with INSERT … ON CONFLICT DO
//     NOTHING before any business write, fingerprinted, leased while
//     'processing', and completed in the business transaction (order,
//     ledger debit, outbox event, stored response). Duplicates get a
//     byte-identical replay, 409 while in flight, 422 for another payload.
//   - GET /v1/idempotency/{key}: the record's state and stored response.
//   - POST /v1/callbacks/payment: provider callbacks deduplicated by the
//     provider transaction number, a forward-only order state machine and
//     one credit per order.
//   - an outbox consumer ([Consume]) with at-least-once delivery and an
//     exactly-once effect (consumed_events in the effect's transaction).
//   - retention purge, start-up refusal of a retention shorter than the
//     client retry window, slog JSON logs, Prometheus /metrics, /healthz,
//     and loopback-only failpoints under /debug/ when enabled.
//
// Exported API:
//
//   - [Serve], [Config], [DefaultTokens], [DefaultProviderToken]: run the service.
//   - [Consume], [ConsumerConfig]: run an outbox consumer.
//   - [Migrate]: create the schema (idempotent).
//   - [Mutants], [Mutant]: the mutant catalogue.
//   - [BenchSQL]: the statements of one request, for the pgbench yardstick.
//   - [ReadEffects], [Effect] and the Effect* kinds: the effect oracle.
//   - [ErrRetentionTooShort], [ErrUnknownMutant], [ErrInvalidConfig],
//     [ErrReplicaRequired].
package reference
