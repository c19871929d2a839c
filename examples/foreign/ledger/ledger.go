// Package ledger is team A's order service: the tenant travels in the JSON
// body, idempotency records live in memory behind one mutex and expire after
// a retention period, and a payment gateway that sometimes fails sits behind
// every order.
//
//	POST /orders
//	Idempotency-Key: <key>
//	{"tenant":"t1","sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, Location: /orders/L-7, {"order_id":"L-7","tenant":"t1",...}
//
// A retry with the same key and the same bytes gets the stored answer again
// (status, Location, body) with Idempotent-Replayed: true; other bytes get
// 422; a duplicate while the first is still running gets 409 with
// Retry-After: 1; no key gets 400. A gateway failure (503) is not stored:
// the key is released so that the retry can succeed. GET /admin/orders
// lists every order with its tenant and idempotency key.
//
// Exported API: [New], [Options].
package ledger

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Options configure the service. The zero value is the service as the team
// ships it (24h retention, a gateway that never fails); the other fields
// are knobs the team has, some of which are mistakes.
type Options struct {
	// Retention is how long a key's answer is kept (default 24h).
	Retention time.Duration
	// FailEvery makes the payment gateway answer 503 on every n-th charge
	// (0: never), as the staging gateway does.
	FailEvery int
	// CacheErrors stores 5xx answers like any other, so a retry after a
	// gateway failure gets the same 503 back forever.
	CacheErrors bool
	// CompleteOn200Only marks a record finished only when the handler
	// answered 200 OK (what the team's first version assumed every create
	// returns); any other answer leaves it "in progress".
	CompleteOn200Only bool
	// FingerprintCommand hashes the decoded order command (which carries the
	// time it was received) instead of the request bytes.
	FingerprintCommand bool
	// ReplayBodyOnly stores only the status and the body of an answer; its
	// headers (Location) are not replayed.
	ReplayBodyOnly bool
}

// New returns the service's handler.
func New(o Options) http.Handler {
	if o.Retention <= 0 {
		o.Retention = 24 * time.Hour
	}
	s := &service{opts: o, records: map[string]*record{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("GET /admin/orders", s.listOrders)
	return mux
}

type service struct {
	opts Options

	mu      sync.Mutex
	records map[string]*record // tenant + "/" + key
	orders  []order
	charges int
}

type record struct {
	fingerprint [32]byte
	done        bool
	created     time.Time
	answer      answer
}

type answer struct {
	status   int
	location string
	body     []byte
}

type order struct {
	ID             string `json:"order_id"`
	Tenant         string `json:"tenant"`
	IdempotencyKey string `json:"idempotency_key"`
	SKU            string `json:"sku"`
	Qty            int    `json:"qty"`
	Amount         int64  `json:"amount"`
	Status         string `json:"status"`
}

// orderCommand is what the handler acts on.
type orderCommand struct {
	Tenant     string    `json:"tenant"`
	SKU        string    `json:"sku"`
	Qty        int       `json:"qty"`
	Amount     int64     `json:"amount"`
	ReceivedAt time.Time `json:"received_at"`
}

func (s *service) createOrder(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeError(w, http.StatusBadRequest, "Idempotency-Key header is required")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read body")
		return
	}
	var cmd orderCommand
	if err := json.Unmarshal(raw, &cmd); err != nil || cmd.Tenant == "" {
		writeError(w, http.StatusBadRequest, "body must be an order with a tenant")
		return
	}
	cmd.ReceivedAt = time.Now()
	fp := sha256.Sum256(raw)
	if s.opts.FingerprintCommand {
		normalized, _ := json.Marshal(cmd)
		fp = sha256.Sum256(normalized)
	}
	scope := cmd.Tenant + "/" + key

	s.mu.Lock()
	rec, found := s.records[scope]
	if found && time.Since(rec.created) > s.opts.Retention {
		delete(s.records, scope)
		found = false
	}
	if found {
		s.mu.Unlock()
		switch {
		case rec.fingerprint != fp:
			writeError(w, http.StatusUnprocessableEntity, "Idempotency-Key was used with a different request")
		case !rec.done:
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusConflict, "a request with this Idempotency-Key is in progress")
		default:
			replay(w, rec.answer)
		}
		return
	}
	rec = &record{fingerprint: fp, created: time.Now()}
	s.records[scope] = rec
	s.mu.Unlock()

	ans := s.placeOrder(cmd, key)

	s.mu.Lock()
	switch {
	case ans.status >= 500 && !s.opts.CacheErrors:
		delete(s.records, scope)
	case s.opts.CompleteOn200Only && ans.status != http.StatusOK:
	default:
		stored := ans
		if s.opts.ReplayBodyOnly {
			stored.location = ""
		}
		rec.answer, rec.done = stored, true
	}
	s.mu.Unlock()
	write(w, ans)
}

// placeOrder charges the payment gateway and records the order.
func (s *service) placeOrder(cmd orderCommand, key string) answer {
	if cmd.Qty <= 0 || cmd.SKU == "" {
		return errorAnswer(http.StatusBadRequest, "sku and a positive qty are required")
	}
	time.Sleep(10 * time.Millisecond) // the gateway's round trip
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charges++
	if s.opts.FailEvery > 0 && s.charges%s.opts.FailEvery == 0 {
		return errorAnswer(http.StatusServiceUnavailable, "payment gateway unavailable, try again")
	}
	o := order{ID: fmt.Sprintf("L-%d", len(s.orders)+1), Tenant: cmd.Tenant, IdempotencyKey: key,
		SKU: cmd.SKU, Qty: cmd.Qty, Amount: cmd.Amount, Status: "confirmed"}
	s.orders = append(s.orders, o)
	body, _ := json.Marshal(o)
	return answer{status: http.StatusCreated, location: "/orders/" + o.ID, body: body}
}

func (s *service) listOrders(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body, _ := json.Marshal(map[string]any{"orders": append([]order{}, s.orders...), "count": len(s.orders)})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func replay(w http.ResponseWriter, a answer) {
	w.Header().Set("Idempotent-Replayed", "true")
	write(w, a)
}

func write(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

func errorAnswer(status int, msg string) answer {
	body, _ := json.Marshal(map[string]string{"error": msg})
	return answer{status: status, body: body}
}

func writeError(w http.ResponseWriter, status int, msg string) { write(w, errorAnswer(status, msg)) }
