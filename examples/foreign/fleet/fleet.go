// Package fleet is team F's order service as it runs in production: two
// instances behind a round-robin balancer, sharing one store (orders and
// idempotency records, as a shared database would). The first instance
// reaches the payment gateway over a slow link, so a charge there can
// outlast the client's timeout: the client gives up and retries, the
// balancer sends the retry to the other instance — and the first one's
// charge is still running.
//
//	POST /orders
//	Idempotency-Key: <key>
//	X-Tenant: t1
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, {"order_id":"F-7","tenant":"t1","instance":1,...}
//
// A key is claimed in the shared store before the charge: a duplicate on
// either instance while it runs gets 409 with Retry-After: 1, and once it
// finished the stored answer (Idempotent-Replayed: true); other bytes get
// 422; no key gets 400. GET /admin/orders lists every order, and how many
// requests are still being handled (the team's dashboard shows it).
//
// Exported API: [New], [Options].
package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure the service. The zero value is the service as the team
// ships it; LocalClaims is the mistake of its first multi-instance release.
type Options struct {
	// SlowCharge is how long a charge takes on the first instance (its
	// link to the gateway); the second instance's take 5ms.
	SlowCharge time.Duration
	// LocalClaims keeps the "in progress" claim in each instance's own
	// memory, as the single-instance version did, and writes only finished
	// answers to the shared store: a retry that reaches the other instance
	// while the first still charges does not see the claim and places the
	// order again.
	LocalClaims bool
	// Charge, when set, is the payment gateway's call in place of the
	// timed one (tests hold a charge running with it); instance is 1 or 2.
	Charge func(instance int)
}

// New returns the balancer in front of the two instances.
func New(o Options) http.Handler {
	if o.SlowCharge <= 0 {
		o.SlowCharge = 400 * time.Millisecond
	}
	st := &store{records: map[string]*record{}}
	b := &balancer{}
	for i, charge := range []time.Duration{o.SlowCharge, 5 * time.Millisecond} {
		in := &instance{n: i + 1, opts: o, store: st, charge: charge, claims: map[string]bool{}}
		mux := http.NewServeMux()
		mux.HandleFunc("POST /orders", in.createOrder)
		mux.HandleFunc("GET /admin/orders", st.list)
		b.instances = append(b.instances, mux)
	}
	return b
}

// balancer sends each request to the next instance in turn.
type balancer struct {
	instances []http.Handler
	next      atomic.Uint64
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := b.next.Add(1) - 1
	b.instances[i%uint64(len(b.instances))].ServeHTTP(w, r)
}

// store is what the instances share: the database.
type store struct {
	mu       sync.Mutex
	records  map[string]*record // tenant + "/" + key
	orders   []order
	charging int // requests being handled, on either instance
}

type record struct {
	body   []byte // the request's bytes: the fingerprint
	done   bool
	status int
	resp   []byte
}

type order struct {
	ID       string `json:"order_id"`
	Tenant   string `json:"tenant"`
	Key      string `json:"idempotency_key"`
	SKU      string `json:"sku"`
	Qty      int    `json:"qty"`
	Amount   int    `json:"amount"`
	Instance int    `json:"instance"`
}

// instance is one replica of the service.
type instance struct {
	n      int
	opts   Options
	store  *store
	charge time.Duration

	mu     sync.Mutex
	claims map[string]bool // LocalClaims: this instance's keys in progress
}

func (in *instance) createOrder(w http.ResponseWriter, r *http.Request) {
	s := in.store
	s.mu.Lock()
	s.charging++ // every request in the handler, counted for the dashboard
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.charging--
		s.mu.Unlock()
	}()
	key, tenant := r.Header.Get("Idempotency-Key"), r.Header.Get("X-Tenant")
	if key == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key is required"})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unreadable body"})
		return
	}
	var req struct {
		SKU    string `json:"sku"`
		Qty    int    `json:"qty"`
		Amount int    `json:"amount"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid order"})
		return
	}
	id := tenant + "/" + key
	if !in.claim(w, id, body) {
		return
	}
	// The payment gateway: the client may give up meanwhile, the charge goes on.
	if in.opts.Charge != nil {
		in.opts.Charge(in.n)
	} else {
		time.Sleep(in.charge)
	}
	s.mu.Lock()
	o := order{ID: fmt.Sprintf("F-%d", len(s.orders)+1), Tenant: tenant, Key: key, SKU: req.SKU, Qty: req.Qty, Amount: req.Amount, Instance: in.n}
	s.orders = append(s.orders, o)
	resp, _ := json.Marshal(o)
	s.records[id] = &record{body: body, done: true, status: http.StatusCreated, resp: resp}
	s.mu.Unlock()
	if in.opts.LocalClaims {
		in.mu.Lock()
		delete(in.claims, id)
		in.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(resp)
}

// claim answers a key that is known (a replay, 409, 422) and returns false,
// or claims it for this request and returns true.
func (in *instance) claim(w http.ResponseWriter, id string, body []byte) bool {
	s := in.store
	s.mu.Lock()
	rec, known := s.records[id]
	if !known && !in.opts.LocalClaims {
		s.records[id] = &record{body: body} // in progress, seen by both instances
	}
	s.mu.Unlock()
	if known {
		switch {
		case !bytes.Equal(rec.body, body):
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "key reused with another request"})
		case !rec.done:
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusConflict, map[string]string{"error": "request in progress"})
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(rec.status)
			_, _ = w.Write(rec.resp)
		}
		return false
	}
	if !in.opts.LocalClaims {
		return true
	}
	// The first release's claim: this instance's memory only.
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.claims[id] {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusConflict, map[string]string{"error": "request in progress"})
		return false
	}
	in.claims[id] = true
	return true
}

func (s *store) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"orders": append([]order{}, s.orders...), "charging": s.charging})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
