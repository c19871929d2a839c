package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Business statements of one order (the transaction that the benchmark's
// pgbench script mirrors).
const (
	// sqlDebit debits the tenant's balance; it never goes negative (the
	// WHERE clause, and the CHECK constraint behind it).
	sqlDebit = `UPDATE accounts SET balance = balance - $2 WHERE tenant = $1 AND balance >= $2 RETURNING balance`
	// sqlInsertOrder stores the order with the tenant and key it was created under.
	sqlInsertOrder = `INSERT INTO orders (id, tenant, idem_key, intent, sku, qty, amount, backstop_ref, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	// sqlInsertDebit is the ledger entry of the debit.
	sqlInsertDebit = `INSERT INTO ledger_entries (tenant, order_id, kind, amount, backstop_ref) VALUES ($1, $2, 'debit', $3, $4)`
	// sqlInsertOutbox is the outbox event, in the business transaction
	// (seed 002 §九): no order without its event, no event without its order.
	sqlInsertOutbox = `INSERT INTO outbox_events (tenant, aggregate_id, event_type, payload) VALUES ($1, $2, 'order.created', $3)`
)

// outboxPayload is the order.created event.
type outboxPayload struct {
	OrderID string `json:"order_id"`
	Tenant  string `json:"tenant"`
	Key     string `json:"idempotency_key"`
	Amount  int64  `json:"amount"`
}

// jsonHeaders are the stored headers of an error response.
var jsonHeaders = []byte(`{"Content-Type":"application/json"}`)

// execute runs the business transaction for an attempt that holds l, and
// answers. It is the only place that writes business rows for an order.
func (s *server) execute(ctx context.Context, w http.ResponseWriter, rc *reqCtx, req *orderRequest, l *lease) {
	if err := s.fp.hit(ctx, fpAfterClaim); err != nil {
		s.systemError(ctx, w, rc, req, l, err)
		return
	}
	tx, resp, err := s.writeBusiness(ctx, req, l)
	switch {
	case errors.Is(err, errLostLease):
		s.afterLostLease(ctx, w, rc, req)
		return
	case errors.Is(err, errBackstop):
		s.storeBackstopConflict(ctx, w, rc, req, l)
		return
	case err != nil:
		s.systemError(ctx, w, rc, req, l, err)
		return
	}
	if err := s.fp.hit(ctx, fpAfterBusinessWrite); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		s.systemError(ctx, w, rc, req, l, err)
		return
	}
	if s.m.is(mutantCommitAfterResponse) {
		// MUTANT commit-after-response: the client gets its answer before
		// the transaction is durable. A crash here loses an acknowledged
		// order; a failed commit is only logged.
		s.writeFresh(w, rc, resp)
		_ = http.NewResponseController(w).Flush()
		_ = s.fp.hit(ctx, fpAfterResponse)
		if err := tx.Commit(ctx); err != nil {
			rc.logger().Error("commit after response failed", "error", err.Error())
		}
		return
	}
	if err := tx.Commit(ctx); err != nil {
		// The commit's outcome is unknown. release only touches a record
		// still 'processing' under our token, so if the commit did land the
		// stored response stays and the retry replays it.
		s.systemError(ctx, w, rc, req, l, fmt.Errorf("commit: %w", err))
		return
	}
	_ = s.fp.hit(ctx, fpAfterCommit)
	if l.afterCommit {
		// MUTANT execute-then-record: only now, after the business commit,
		// does the key get a record.
		if _, err := s.pool.Exec(ctx, sqlRecordUnfenced, req.id.tenant, req.id.scope, req.id.key, req.fingerprint,
			stateFor(resp), resp.status, resp.headers, resp.body); err != nil {
			rc.logger().Error("record after commit failed", "error", err.Error())
		}
	}
	s.writeFresh(w, rc, resp)
	_ = http.NewResponseController(w).Flush()
	_ = s.fp.hit(ctx, fpAfterResponse)
}

// writeBusiness opens the business transaction: debit, record the
// outcome (fenced by the lease), order, ledger entry, outbox event. It
// returns the open transaction and the response to send after commit; a
// business failure (insufficient balance) is a stored 402, also committed.
func (s *server) writeBusiness(ctx context.Context, req *orderRequest, l *lease) (_ pgx.Tx, resp storedResponse, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, resp, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var balance int64
	err = tx.QueryRow(ctx, sqlDebit, req.tenant, req.body.Amount).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		// Business failure: stored and replayed, never re-executed.
		b, _ := json.Marshal(apiError{Error: "insufficient_balance", Message: fmt.Sprintf("balance too low for amount %d", req.body.Amount)})
		resp = storedResponse{status: http.StatusPaymentRequired, headers: jsonHeaders, body: b}
		if err = s.record(ctx, tx, req.id, req.fingerprint, l, stateFailed, resp); err != nil {
			return nil, resp, err
		}
		return tx, resp, nil
	}
	if err != nil {
		return nil, resp, fmt.Errorf("debit: %w", err)
	}
	order := orderResponse{
		ID: newOrderID(), Tenant: req.tenant, SKU: req.body.SKU, Qty: req.body.Qty, Amount: req.body.Amount,
		State: "pending", CreatedAt: time.Now().UTC().Format(time.RFC3339Nano),
	}
	body, _ := json.Marshal(order)
	hdr, _ := json.Marshal(map[string]string{"Content-Type": "application/json", "Location": "/v1/orders/" + order.ID})
	resp = storedResponse{status: http.StatusCreated, headers: hdr, body: body}
	if err = s.record(ctx, tx, req.id, req.fingerprint, l, stateSucceeded, resp); err != nil {
		return nil, resp, err
	}
	var orderRef, debitRef *string
	if !s.m.disablesBackstop() {
		orderRef = ptr(req.tenant + "\x1f" + routeOrders + "\x1f" + req.key)
	}
	debitRef = ptr("debit:" + order.ID)
	var intent *string
	if req.intent != "" {
		intent = &req.intent
	}
	if _, err = tx.Exec(ctx, sqlInsertOrder, order.ID, req.tenant, req.key, intent, order.SKU, order.Qty, order.Amount, orderRef, order.CreatedAt); err != nil {
		if isUniqueViolation(err, "orders_backstop_ref_key") {
			return nil, resp, errBackstop
		}
		return nil, resp, fmt.Errorf("insert order: %w", err)
	}
	if _, err = tx.Exec(ctx, sqlInsertDebit, req.tenant, order.ID, order.Amount, debitRef); err != nil {
		return nil, resp, fmt.Errorf("insert debit: %w", err)
	}
	payload, _ := json.Marshal(outboxPayload{OrderID: order.ID, Tenant: req.tenant, Key: req.key, Amount: order.Amount})
	if _, err = tx.Exec(ctx, sqlInsertOutbox, req.tenant, order.ID, string(payload)); err != nil {
		return nil, resp, fmt.Errorf("insert outbox: %w", err)
	}
	return tx, resp, nil
}

func stateFor(resp storedResponse) string {
	if resp.status >= 200 && resp.status < 300 {
		return stateSucceeded
	}
	return stateFailed
}

func (s *server) writeFresh(w http.ResponseWriter, rc *reqCtx, resp storedResponse) {
	var hdr map[string]string
	_ = json.Unmarshal(resp.headers, &hdr)
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	rc.write(w, resp.status, outcomeExecuted, resp.body)
}

// systemError answers 500 and releases the key so that the same key may
// execute again (seed 002 §四: failed → retry allowed). Nothing is stored.
func (s *server) systemError(ctx context.Context, w http.ResponseWriter, rc *reqCtx, req *orderRequest, l *lease, err error) {
	rc.logger().Error("system error; key released", "error", err.Error())
	s.release(ctx, req.id, l)
	rc.writeError(w, http.StatusInternalServerError, outcomeError, "internal", "the request failed and was not applied; retry with the same key")
}

// afterLostLease answers an attempt whose lease was taken over while it
// ran: its writes were rolled back, and it answers as a duplicate would.
func (s *server) afterLostLease(ctx context.Context, w http.ResponseWriter, rc *reqCtx, req *orderRequest) {
	rc.logger().Warn("lease lost to a takeover; rolled back")
	rec, err := lookup(ctx, s.pool, req.id)
	if err == nil && rec != nil && rec.replayable() {
		s.replay(w, rc, rec)
		return
	}
	if rec == nil {
		rec = &keyRecord{}
	}
	s.conflict(w, rc, rec)
}

// storeBackstopConflict stores a 409 for a key whose order already exists
// although its key record did not say so (defence in depth fired).
func (s *server) storeBackstopConflict(ctx context.Context, w http.ResponseWriter, rc *reqCtx, req *orderRequest, l *lease) {
	rc.logger().Warn("business unique constraint caught a duplicate order")
	b, _ := json.Marshal(apiError{Error: "order_exists", Message: "an order for this Idempotency-Key already exists"})
	resp := storedResponse{status: http.StatusConflict, headers: jsonHeaders, body: b}
	tx, err := s.pool.Begin(ctx)
	if err == nil {
		if err = s.record(ctx, tx, req.id, req.fingerprint, l, stateFailed, resp); err == nil {
			err = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		s.systemError(ctx, w, rc, req, l, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	rc.write(w, resp.status, outcomeRejected, resp.body)
}

func isUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}

func ptr[T any](v T) *T { return &v }
