package reference

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Key record states (seed 002 §四: the three-state machine).
const (
	stateProcessing = "processing"
	stateSucceeded  = "succeeded"
	stateFailed     = "failed"
)

// routeOrders is the scope (method + route) of the orders endpoint.
const routeOrders = "POST /v1/orders"

// sqlClaim is the claim: INSERT … ON CONFLICT DO NOTHING on the unique key
// (tenant, scope, key), before any business write. The unique index is the
// only arbiter: two racing inserts cannot both succeed. When the insert
// loses, the same statement returns the existing record, so a replay costs
// one round trip. If the conflicting row was committed after this
// statement's snapshot was taken, neither branch returns a row; the caller
// then retries.
const sqlClaim = `WITH claim AS (
	INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, lease_token, lease_expires_at)
	VALUES ($1, $2, $3, $4, 'processing', $5, now() + $6::float8 * interval '1 second')
	ON CONFLICT (tenant, scope, idem_key) DO NOTHING
	RETURNING true AS claimed
)
SELECT true, '', '', NULL::int, NULL::jsonb, NULL::bytea, NULL::timestamptz, now() FROM claim
UNION ALL
SELECT false, k.fingerprint, k.state, k.status_code, k.response_headers, k.response_body, k.lease_expires_at, now()
FROM idempotency_keys k
WHERE k.tenant = $1 AND k.scope = $2 AND k.idem_key = $3 AND NOT EXISTS (SELECT 1 FROM claim)`

// sqlLookup reads one record.
const sqlLookup = `SELECT fingerprint, state, status_code, response_headers, response_body, lease_expires_at, now(), created_at, updated_at
FROM idempotency_keys WHERE tenant = $1 AND scope = $2 AND idem_key = $3`

// sqlInsertUnchecked is the check-then-insert mutant's insert: its result
// is ignored, because the mutant already "knows" from its SELECT that the
// key is free.
const sqlInsertUnchecked = `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, lease_expires_at)
VALUES ($1, $2, $3, $4, 'processing', now() + $5::float8 * interval '1 second')
ON CONFLICT (tenant, scope, idem_key) DO NOTHING`

// sqlTakeover re-claims a record whose holder is presumed dead (lease
// expired) or which a system error released (failed, nothing stored). A
// new lease token fences the previous holder out: its completion matches
// no row and its transaction rolls back.
const sqlTakeover = `UPDATE idempotency_keys
SET state = 'processing', lease_token = $4, lease_expires_at = now() + $5::float8 * interval '1 second', updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3
  AND ((state = 'processing' AND lease_expires_at < now()) OR (state = 'failed' AND status_code IS NULL))`

// sqlComplete stores the outcome, fenced by the lease token, inside the
// business transaction (seed 002 §四 细节一: business commit and
// "succeeded" in one transaction). It runs before the business inserts, so
// the record row is locked for the rest of the transaction: a takeover
// waits for the commit and then sees the final state.
const sqlComplete = `UPDATE idempotency_keys
SET state = $5, status_code = $6, response_headers = $7, response_body = $8, lease_expires_at = NULL, updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3 AND lease_token = $4 AND state = 'processing'`

// sqlRecordUnfenced is how the mutants without a lease record an outcome:
// an upsert that trusts whoever writes last.
const sqlRecordUnfenced = `INSERT INTO idempotency_keys (tenant, scope, idem_key, fingerprint, state, status_code, response_headers, response_body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant, scope, idem_key) DO UPDATE
SET state = excluded.state, status_code = excluded.status_code, response_headers = excluded.response_headers,
    response_body = excluded.response_body, lease_expires_at = NULL, updated_at = now()`

// sqlRelease marks a record failed with nothing stored after a system
// error, so the same key may execute again.
const sqlRelease = `UPDATE idempotency_keys
SET state = 'failed', status_code = NULL, response_headers = NULL, response_body = NULL, lease_expires_at = NULL, updated_at = now()
WHERE tenant = $1 AND scope = $2 AND idem_key = $3 AND lease_token = $4 AND state = 'processing'`

// keyRecord is a stored idempotency record.
type keyRecord struct {
	fingerprint string
	state       string
	status      *int32
	headers     []byte // JSON object: header name → value
	body        []byte
	leaseExpiry *time.Time
	now         time.Time // the database clock when read
	createdAt   time.Time
	updatedAt   time.Time
}

// replayable reports whether the record holds a response to replay: a
// success or a stored business failure.
func (k *keyRecord) replayable() bool { return k.status != nil && k.state != stateProcessing }

// recordID is the record's primary key.
type recordID struct {
	tenant string // "" under the global-namespace mutant
	scope  string
	key    string
}

// lease is what an attempt holds while it executes.
type lease struct {
	// token fences the completion; "" means an unfenced mutant path that
	// records its outcome with an upsert.
	token string
	// noRecord: the no-key mutant keeps no record at all.
	noRecord bool
	// afterCommit: the execute-then-record mutant writes the record only
	// after the business transaction committed.
	afterCommit bool
}

// storedResponse is a response as stored and replayed.
type storedResponse struct {
	status  int
	headers []byte // JSON object
	body    []byte
}

// claim tries to take the key. It returns the lease when this attempt
// owns the execution, else the existing record (rec == nil and lease ==
// nil: lost a snapshot race, try again).
func (s *server) claim(ctx context.Context, id recordID, fp string) (*lease, *keyRecord, error) {
	leaseSecs := ptr(s.cfg.Lease.Seconds())
	if s.m.is(mutantNoLease) {
		// MUTANT no-lease: 'processing' gets no expiry, so when its holder
		// dies nobody may ever take over.
		leaseSecs = nil
	}
	tok := newToken()
	rows, err := s.pool.Query(ctx, sqlClaim, id.tenant, id.scope, id.key, fp, tok, leaseSecs)
	if err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	var claimed bool
	rec := &keyRecord{}
	found := false
	for rows.Next() {
		if err := rows.Scan(&claimed, &rec.fingerprint, &rec.state, &rec.status, &rec.headers, &rec.body, &rec.leaseExpiry, &rec.now); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("claim: scan: %w", err)
		}
		found = true
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	switch {
	case found && claimed:
		return &lease{token: tok}, nil, nil
	case found:
		return nil, rec, nil
	default:
		return nil, nil, nil
	}
}

// lookup reads a record from pool (the primary, or the replica under the
// replica-read mutant). It returns nil when there is none.
func lookup(ctx context.Context, pool *pgxpool.Pool, id recordID) (*keyRecord, error) {
	rec := &keyRecord{}
	err := pool.QueryRow(ctx, sqlLookup, id.tenant, id.scope, id.key).Scan(
		&rec.fingerprint, &rec.state, &rec.status, &rec.headers, &rec.body, &rec.leaseExpiry, &rec.now, &rec.createdAt, &rec.updatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return rec, nil
}

// takeover re-claims an expired or released record; ok is false when
// another attempt got there first (or the record changed state).
func (s *server) takeover(ctx context.Context, id recordID) (*lease, bool, error) {
	tok := newToken()
	tag, err := s.pool.Exec(ctx, sqlTakeover, id.tenant, id.scope, id.key, tok, s.cfg.Lease.Seconds())
	if err != nil {
		return nil, false, fmt.Errorf("takeover: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil, false, nil
	}
	return &lease{token: tok}, true, nil
}

// record stores resp under id inside tx, as the lease dictates.
func (s *server) record(ctx context.Context, tx pgx.Tx, id recordID, fp string, l *lease, state string, resp storedResponse) error {
	switch {
	case l.noRecord, l.afterCommit:
		return nil
	case l.token == "":
		if _, err := tx.Exec(ctx, sqlRecordUnfenced, id.tenant, id.scope, id.key, fp, state, resp.status, resp.headers, resp.body); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	}
	tag, err := tx.Exec(ctx, sqlComplete, id.tenant, id.scope, id.key, l.token, state, resp.status, resp.headers, resp.body)
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errLostLease
	}
	return nil
}

// release marks the record failed-and-retryable after a system error. It
// runs detached from the request (which may be what failed) with its own
// short timeout; if it cannot run, the lease expiry does the same later.
func (s *server) release(ctx context.Context, id recordID, l *lease) {
	if l == nil || l.token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, sqlRelease, id.tenant, id.scope, id.key, l.token); err != nil {
		s.log.Warn("release after system error failed; the lease will expire", "error", err.Error())
	}
}
