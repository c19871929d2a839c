package reference

import (
	"context"
	"net/http"
	"time"
)

// keyStatus is the body of GET /v1/idempotency/{key}.
type keyStatus struct {
	Key            string          `json:"key"`
	Scope          string          `json:"scope"`
	State          string          `json:"state"`
	Retryable      bool            `json:"retryable"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	LeaseExpiresAt *time.Time      `json:"lease_expires_at,omitempty"`
	Response       *statusResponse `json:"response,omitempty"`
}

type statusResponse struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// idempotencyStatus is GET /v1/idempotency/{key}: the record's state for a
// client that lost a response (seed 002 §六 ③ GET 兜底查询). It reads the
// primary, within the caller's tenant only.
func (s *server) idempotencyStatus(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	key := r.PathValue("key")
	rc.key = key
	if key == "" || len(key) > maxKeyBytes || !visibleASCII(key) {
		rc.writeError(w, http.StatusBadRequest, outcomeRejected, "invalid_idempotency_key", "key must be 1-255 bytes of visible ASCII")
		return
	}
	id := recordID{tenant: rc.tenant, scope: routeOrders, key: key}
	if s.m.is(mutantGlobalNamespace) {
		id.tenant = "" // MUTANT global-namespace (see parseOrder)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	rec, err := lookup(ctx, s.pool, id)
	if err != nil {
		rc.logger().Error("status lookup failed", "error", err.Error())
		rc.writeError(w, http.StatusInternalServerError, outcomeError, "internal", "lookup failed")
		return
	}
	if rec == nil {
		rc.writeError(w, http.StatusNotFound, outcomeRejected, "not_found", "no record for this key (never seen, or purged after the retention)")
		return
	}
	st := keyStatus{Key: key, Scope: routeOrders, State: rec.state, CreatedAt: rec.createdAt, UpdatedAt: rec.updatedAt, LeaseExpiresAt: rec.leaseExpiry}
	st.Retryable = (rec.state == stateFailed && !rec.replayable()) ||
		(rec.state == stateProcessing && rec.leaseExpiry != nil && !rec.leaseExpiry.After(rec.now))
	if rec.replayable() {
		st.Response = &statusResponse{Status: int(*rec.status), Body: string(rec.body)}
	}
	rc.writeJSON(w, http.StatusOK, outcomeRead, st)
}
