package reference

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// orderBody is the POST /v1/orders request body. Unknown fields are
// allowed; they are part of the fingerprint.
type orderBody struct {
	SKU    string `json:"sku"`
	Qty    int    `json:"qty"`
	Amount int64  `json:"amount"`
}

// orderResponse is the 201 body. Its bytes are stored and replayed as is.
type orderResponse struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant"`
	SKU       string `json:"sku"`
	Qty       int    `json:"qty"`
	Amount    int64  `json:"amount"`
	State     string `json:"state"`
	CreatedAt string `json:"created_at"`
}

// orderRequest is a validated POST /v1/orders.
type orderRequest struct {
	tenant      string
	key         string // the client's Idempotency-Key, stored on the order
	intent      string // optional X-Intent-ID, recorded for the oracle only
	id          recordID
	fingerprint string
	body        orderBody
}

const maxKeyBytes = 255

// createOrder is POST /v1/orders.
func (s *server) createOrder(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	req, ok := s.parseOrder(w, r, rc)
	if !ok {
		return
	}
	// The work is detached from the client connection: once a key is
	// claimed, the attempt finishes (or releases it) even if the client
	// hangs up, instead of leaving a half-done claim to its lease.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.RequestTimeout)
	defer cancel()

	for range 3 {
		l, rec, err := s.acquire(ctx, req)
		if err != nil {
			rc.logger().Error("claim failed", "error", err.Error())
			rc.writeError(w, http.StatusInternalServerError, outcomeError, "internal", "could not claim the idempotency key")
			return
		}
		if l != nil {
			s.execute(ctx, w, rc, req, l)
			return
		}
		if rec == nil {
			continue // the conflicting row committed after our snapshot: look again
		}
		switch s.judge(req, rec) {
		case verdictReject:
			rc.writeError(w, http.StatusUnprocessableEntity, outcomeRejected, "idempotency_key_reused",
				"this Idempotency-Key was used with a different request")
			return
		case verdictReplay:
			s.replay(w, rc, rec)
			return
		case verdictConflict:
			s.conflict(w, rc, rec)
			return
		case verdictReexecute:
			// MUTANT processing-reexecutes: a duplicate that finds the key
			// in flight treats it as absent and runs the business logic
			// again, leaving the record to its first holder.
			s.execute(ctx, w, rc, req, &lease{noRecord: true})
			return
		case verdictTakeover:
			l, ok, err := s.takeover(ctx, req.id)
			if err != nil {
				rc.logger().Error("takeover failed", "error", err.Error())
				rc.writeError(w, http.StatusInternalServerError, outcomeError, "internal", "could not claim the idempotency key")
				return
			}
			if ok {
				rc.logger().Info("took over an expired or released key")
				s.execute(ctx, w, rc, req, l)
				return
			}
		}
	}
	s.conflict(w, rc, &keyRecord{}) // the key kept changing hands under us
}

// parseOrder validates key and body. Everything it rejects is rejected
// before any write, identically on every retry, so nothing is stored.
func (s *server) parseOrder(w http.ResponseWriter, r *http.Request, rc *reqCtx) (*orderRequest, bool) {
	key := r.Header.Get(headerIdempotencyKey)
	if len(r.Header.Values(headerIdempotencyKey)) > 1 || key == "" || len(key) > maxKeyBytes || !visibleASCII(key) {
		rc.writeError(w, http.StatusBadRequest, outcomeRejected, "invalid_idempotency_key",
			"Idempotency-Key must be 1-255 bytes of visible ASCII")
		return nil, false
	}
	raw, err := readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		rc.writeError(w, http.StatusRequestEntityTooLarge, outcomeRejected, "body_too_large", "request body above 1 MiB")
		return nil, false
	}
	if err != nil {
		rc.writeError(w, http.StatusBadRequest, outcomeRejected, "bad_request", "could not read the request body")
		return nil, false
	}
	canon, body, err := canonicalOrder(raw)
	if err != nil {
		rc.writeError(w, http.StatusBadRequest, outcomeRejected, "invalid_body", err.Error())
		return nil, false
	}
	req := &orderRequest{
		tenant:      rc.tenant,
		key:         key,
		intent:      r.Header.Get(headerIntent),
		id:          recordID{tenant: rc.tenant, scope: routeOrders, key: key},
		fingerprint: fingerprint(routeOrders, canon),
		body:        body,
	}
	if len(req.intent) > maxKeyBytes || !visibleASCII(req.intent) {
		req.intent = ""
	}
	if s.m.is(mutantGlobalNamespace) {
		// MUTANT global-namespace: the key scope leaves the tenant out, so
		// tenant B's key can hit tenant A's record.
		req.id.tenant = ""
	}
	if s.m.is(mutantBodyHashKey) {
		// MUTANT body-hash-key: the body's hash replaces the client's key,
		// so two intents with identical bodies are taken for one.
		sum := sha256.Sum256(canon)
		req.id.key = "body:" + hex.EncodeToString(sum[:])
	}
	return req, true
}

// canonicalOrder validates the body and returns its canonical form: the
// JSON re-encoded with sorted keys and no insignificant whitespace, so a
// retry that re-serialises the same payload has the same fingerprint. A
// plain flat body takes the allocation-light [canonicalFlat], which yields
// the same bytes.
func canonicalOrder(raw []byte) ([]byte, orderBody, error) {
	if canon, body, ok := canonicalFlat(raw); ok {
		return canon, body, nil
	}
	return canonicalGeneral(raw)
}

// canonicalGeneral is canonicalOrder for any body: decode into a map, check
// the fields, re-encode.
func canonicalGeneral(raw []byte) ([]byte, orderBody, error) {
	if err := plainText(raw); err != nil {
		return nil, orderBody{}, err
	}
	var generic map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil || generic == nil || dec.More() {
		return nil, orderBody{}, errBodyNotObject
	}
	var body orderBody
	var ok bool
	if body.SKU, ok = generic["sku"].(string); !ok {
		return nil, orderBody{}, errBodyFields
	}
	qty, qerr := jsonInt(generic["qty"])
	amount, aerr := jsonInt(generic["amount"])
	if qerr != nil || aerr != nil || body.SKU == "" || len(body.SKU) > 64 || qty < 1 || qty > 1000 || amount < 1 || amount > 1_000_000_000 {
		return nil, orderBody{}, errBodyFields
	}
	body.Qty, body.Amount = int(qty), amount
	canon, err := json.Marshal(generic) // map keys are sorted
	if err != nil {
		return nil, orderBody{}, errBodyNotObject
	}
	return canon, body, nil
}

// plainText refuses a body encoding/json would decode into text it cannot
// keep apart, or Postgres cannot store: bytes that are not UTF-8 and lone
// surrogate escapes (\ud800) both decode to U+FFFD, so two different
// payloads would share a fingerprint and one would replay the other's
// answer; \u0000 decodes to a NUL that a text column refuses, a 500 on
// every retry. Refused before any write, the same on every retry.
func plainText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errBodyText
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue // \\, \", \n ...: one byte escaped
		}
		r, ok := hex4(raw, i+1)
		switch {
		case !ok:
			continue // not an escape the decoder takes: it says so
		case r == 0:
			return errBodyText
		case r >= 0xdc00 && r <= 0xdfff:
			return errBodyText // a low surrogate with no high one before it
		case r >= 0xd800 && r <= 0xdbff:
			lo, ok := hex4(raw, i+7)
			if i+6 >= len(raw) || raw[i+5] != '\\' || raw[i+6] != 'u' || !ok || lo < 0xdc00 || lo > 0xdfff {
				return errBodyText
			}
			i += 10
			continue
		}
		i += 4
	}
	return nil
}

// hex4 reads the four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonInt reads a whole JSON number.
func jsonInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errBodyFields
	}
	return n.Int64()
}

// fingerprint hashes the canonical request: method and route, then body.
func fingerprint(scope string, canonBody []byte) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(canonBody)
	return hex.EncodeToString(h.Sum(nil))
}

// acquire is the claim step, with the mutants that replace it.
func (s *server) acquire(ctx context.Context, req *orderRequest) (*lease, *keyRecord, error) {
	switch {
	case s.m.is(mutantNoKey):
		// MUTANT no-key: the key is never looked at; every request executes.
		if err := s.fp.hit(ctx, fpBeforeClaim); err != nil {
			return nil, nil, err
		}
		return &lease{noRecord: true}, nil, nil
	case s.m.is(mutantCheckThenInsert), s.m.is(mutantExecuteThenRecord), s.m.is(mutantReplicaRead):
		pool := s.pool
		if s.m.is(mutantReplicaRead) {
			// MUTANT replica-read: the idempotency lookup goes to a
			// lagging standby, which may not have the record yet.
			pool = s.replica
		}
		// MUTANT check-then-insert / execute-then-record / replica-read:
		// look first, decide on what was seen. The gap between this SELECT
		// and the write below is the race window (seed 002 §五).
		rec, err := lookup(ctx, pool, req.id)
		if err != nil || rec != nil {
			return nil, rec, err
		}
		if err := s.fp.hit(ctx, fpBeforeClaim); err != nil {
			return nil, nil, err
		}
		switch {
		case s.m.is(mutantCheckThenInsert):
			// The insert's outcome is ignored: the SELECT said "free".
			if _, err := s.pool.Exec(ctx, sqlInsertUnchecked, req.id.tenant, req.id.scope, req.id.key, req.fingerprint, s.cfg.Lease.Seconds()); err != nil {
				return nil, nil, err
			}
			return &lease{}, nil, nil
		case s.m.is(mutantExecuteThenRecord):
			return &lease{afterCommit: true}, nil, nil
		default: // replica-read: no claim at all, the outcome is upserted
			return &lease{}, nil, nil
		}
	}
	if err := s.fp.hit(ctx, fpBeforeClaim); err != nil {
		return nil, nil, err
	}
	return s.claim(ctx, req.id, req.fingerprint)
}

type verdict int

const (
	verdictReject verdict = iota
	verdictReplay
	verdictConflict
	verdictTakeover
	verdictReexecute
)

// judge decides what a duplicate gets (seed 002 §四 and §三 fingerprint).
func (s *server) judge(req *orderRequest, rec *keyRecord) verdict {
	// MUTANT no-fingerprint: the payload check is skipped, so a reused key
	// with another payload gets the first payload's response.
	if !s.m.is(mutantNoFingerprint) && rec.fingerprint != req.fingerprint {
		return verdictReject
	}
	switch {
	case rec.replayable():
		return verdictReplay
	case rec.state == stateFailed:
		return verdictTakeover // a system error released it
	case s.m.is(mutantProcessingReexecutes):
		return verdictReexecute
	case rec.leaseExpiry == nil || rec.leaseExpiry.After(rec.now):
		return verdictConflict // in flight (or, under no-lease, stuck)
	default:
		return verdictTakeover // the holder's lease expired: it presumably died
	}
}

// replay writes the stored response, byte for byte.
func (s *server) replay(w http.ResponseWriter, rc *reqCtx, rec *keyRecord) {
	w.Header().Set(headerReplayed, "true")
	if s.m.is(mutantEmptyReplay) {
		// MUTANT empty-replay: "it was done already, 200 will do".
		rc.write(w, http.StatusOK, outcomeReplayed, nil)
		return
	}
	if kv, n, ok := plainHeaders(rec.headers); ok {
		for _, h := range kv[:n] {
			w.Header().Set(h[0], h[1])
		}
	} else {
		var hdr map[string]string
		_ = json.Unmarshal(rec.headers, &hdr)
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
	}
	body := rec.body
	if s.m.is(mutantRegenerateOnReplay) {
		// MUTANT regenerate-on-replay: the response is rebuilt with a fresh
		// id and timestamp instead of returning the stored bytes.
		body = regenerate(body)
	}
	rc.write(w, int(*rec.status), outcomeReplayed, body)
}

func regenerate(body []byte) []byte {
	var o orderResponse
	if err := json.Unmarshal(body, &o); err != nil || o.ID == "" {
		return body
	}
	o.ID, o.CreatedAt = newOrderID(), time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(o)
	return b
}

// conflict answers 409 with Retry-After: the seconds left on the lease.
func (s *server) conflict(w http.ResponseWriter, rc *reqCtx, rec *keyRecord) {
	secs := 1
	if rec.leaseExpiry != nil {
		secs = max(1, int(math.Ceil(rec.leaseExpiry.Sub(rec.now).Seconds())))
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	rc.writeError(w, http.StatusConflict, outcomeConflict, "request_in_progress",
		"a request with this Idempotency-Key is being processed; retry after the given delay")
}

func newOrderID() string { return "ord_" + rand.Text() }
func newToken() string   { return rand.Text() }
