package reference

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// callbackBody is a payment provider's notification.
type callbackBody struct {
	ProviderTx string `json:"provider_tx"`
	OrderID    string `json:"order_id"`
	Status     string `json:"status"` // "paid" or "fulfilled"
	Amount     int64  `json:"amount"`
}

// callbackResult is the 200 body of a callback.
type callbackResult struct {
	Result     string `json:"result"` // applied, ignored (state already there or beyond), duplicate
	OrderState string `json:"order_state,omitempty"`
}

const (
	// sqlCallbackDedupe records the provider transaction; a redelivery
	// conflicts on the primary key (seed 002 §八 ②).
	sqlCallbackDedupe = `INSERT INTO payment_callbacks (provider_tx, order_id, status, amount, payload, intent)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (provider_tx) DO NOTHING`
	// sqlAdvanceOrder moves the order forward only (pending → paid →
	// fulfilled, skipping allowed, never back) and returns the old state.
	sqlAdvanceOrder = `UPDATE orders o SET state = $2, state_at = clock_timestamp()
FROM (SELECT id, state AS old_state FROM orders WHERE id = $1 FOR UPDATE) p
WHERE o.id = p.id
  AND array_position(ARRAY['pending','paid','fulfilled'], p.old_state) < array_position(ARRAY['pending','paid','fulfilled'], $2::text)
RETURNING o.tenant, o.amount, p.old_state`
	sqlOrderState = `SELECT state FROM orders WHERE id = $1`
	// sqlCredit credits the order's amount once: the transition out of
	// 'pending' happens once, and the ledger's backstop_ref repeats it as
	// a unique constraint.
	sqlCreditAccount = `UPDATE accounts SET credited = credited + $2 WHERE tenant = $1`
	sqlInsertCredit  = `INSERT INTO ledger_entries (tenant, order_id, kind, amount, backstop_ref) VALUES ($1, $2, 'credit', $3, $4)`
)

// paymentCallback is POST /v1/callbacks/payment. It answers 200 as soon as
// the callback is deduplicated and applied (one short transaction), and at
// once for a redelivery, so the provider stops retrying.
func (s *server) paymentCallback(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	raw, err := readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		rc.writeError(w, http.StatusRequestEntityTooLarge, outcomeRejected, "body_too_large", "request body above 1 MiB")
		return
	}
	// Verify first (seed 002 §八 ①): an unsigned, forged or replayed
	// callback is refused before anything is stored.
	if err == nil {
		if code, why := verifyCallback(r.Header.Get(SignatureHeader), raw, []byte(s.cfg.ProviderSecret), time.Now()); code != "" {
			rc.writeError(w, http.StatusBadRequest, outcomeRejected, code, why)
			return
		}
	}
	var cb callbackBody
	// plainText: a provider_tx with \u0000 cannot be stored (a 500 on
	// every redelivery), and lone surrogates would make two ids one.
	if err != nil || plainText(raw) != nil || json.Unmarshal(raw, &cb) != nil || cb.ProviderTx == "" || len(cb.ProviderTx) > 255 ||
		cb.OrderID == "" || len(cb.OrderID) > 64 || (cb.Status != "paid" && cb.Status != "fulfilled") || cb.Amount < 0 {
		rc.writeError(w, http.StatusBadRequest, outcomeRejected, "invalid_callback",
			`body must be {"provider_tx","order_id","status":"paid|fulfilled","amount"}`)
		return
	}
	rc.with("provider_tx", cb.ProviderTx, "order_id", cb.OrderID)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.RequestTimeout)
	defer cancel()
	res, status, err := s.applyCallback(ctx, cb, raw, r.Header.Get(headerIntent))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		rc.writeError(w, http.StatusNotFound, outcomeRejected, "unknown_order", "no such order")
	case err != nil:
		rc.logger().Error("callback failed", "error", err.Error())
		rc.writeError(w, http.StatusInternalServerError, outcomeError, "internal", "callback not applied; redeliver")
	default:
		outcome := outcomeExecuted
		if res.Result == "duplicate" {
			outcome = outcomeReplayed
		}
		rc.writeJSON(w, status, outcome, res)
	}
}

func (s *server) applyCallback(ctx context.Context, cb callbackBody, raw []byte, intent string) (res callbackResult, status int, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return res, 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var in *string
	if intent != "" {
		in = &intent
	}
	tag, err := tx.Exec(ctx, sqlCallbackDedupe, cb.ProviderTx, cb.OrderID, cb.Status, cb.Amount, string(raw), in)
	if err != nil {
		return res, 0, fmt.Errorf("dedupe: %w", err)
	}
	accumulate := s.m.is(mutantCallbackAccumulates)
	if tag.RowsAffected() == 0 && !accumulate {
		return callbackResult{Result: "duplicate"}, http.StatusOK, nil
	}
	if err := s.fp.hit(ctx, fpCallbackAfterDedupe); err != nil {
		return res, 0, err
	}
	var tenant, oldState string
	var amount int64
	err = tx.QueryRow(ctx, sqlAdvanceOrder, cb.OrderID, cb.Status).Scan(&tenant, &amount, &oldState)
	advanced := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		var state string
		if err := tx.QueryRow(ctx, sqlOrderState, cb.OrderID).Scan(&state); err != nil {
			return res, 0, err // ErrNoRows: unknown order; the dedupe row rolls back with it
		}
		res = callbackResult{Result: "ignored", OrderState: state}
		if accumulate {
			if err := tx.QueryRow(ctx, `SELECT tenant FROM orders WHERE id = $1`, cb.OrderID).Scan(&tenant); err != nil {
				return res, 0, fmt.Errorf("order tenant: %w", err)
			}
		}
	} else if err != nil {
		return res, 0, fmt.Errorf("advance order: %w", err)
	} else {
		res = callbackResult{Result: "applied", OrderState: cb.Status}
	}
	switch {
	case accumulate && cb.Amount > 0:
		// MUTANT callback-accumulates: every delivery credits the amount it
		// carries ("收到回调就加钱"), whatever the order's state, and the
		// credit has no business key to stop it.
		if err := s.credit(ctx, tx, tenant, cb.OrderID, cb.Amount, nil); err != nil {
			return res, 0, err
		}
		res.Result = "applied"
	case advanced && oldState == "pending":
		// Credit exactly once per order: on the one transition out of
		// pending, with the order's own amount, never the callback's.
		if err := s.credit(ctx, tx, tenant, cb.OrderID, amount, ptr("credit:"+cb.OrderID)); err != nil {
			return res, 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, 0, fmt.Errorf("commit: %w", err)
	}
	return res, http.StatusOK, nil
}

func (s *server) credit(ctx context.Context, tx pgx.Tx, tenant, orderID string, amount int64, ref *string) error {
	if _, err := tx.Exec(ctx, sqlCreditAccount, tenant, amount); err != nil {
		return fmt.Errorf("credit account: %w", err)
	}
	if _, err := tx.Exec(ctx, sqlInsertCredit, tenant, orderID, amount, ref); err != nil {
		return fmt.Errorf("credit ledger: %w", err)
	}
	return nil
}

// SignatureHeader carries a callback's signature, the way payment
// providers sign (Stripe's Stripe-Signature): "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<body>" under the provider's secret>", one v1 per
// secret while a secret is rotated.
const SignatureHeader = "Webhook-Signature"

// SignatureTolerance is how old a signed timestamp may be: a captured
// callback replayed later is refused.
const SignatureTolerance = 5 * time.Minute

// SignCallback returns the SignatureHeader value of body signed with
// secret at t.
func SignCallback(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(callbackMAC(secret, ts, body))
}

func callbackMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// verifyCallback checks a callback's signature header against its raw
// body; it returns an error code and a reason, "" when it holds.
func verifyCallback(header string, body, secret []byte, now time.Time) (code, why string) {
	if header == "" {
		return "missing_signature", "the " + SignatureHeader + " header is required"
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return "invalid_signature", SignatureHeader + " must be t=<unix seconds>,v1=<hex HMAC-SHA256>"
	}
	want := callbackMAC(secret, ts, body)
	ok := false
	for _, sig := range sigs {
		ok = ok || hmac.Equal(sig, want)
	}
	if !ok {
		return "invalid_signature", "the signature does not match the body"
	}
	if d := now.Sub(time.Unix(sec, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return "stale_signature", "the signed timestamp is more than " + SignatureTolerance.String() + " away: a replayed callback"
	}
	return "", ""
}
