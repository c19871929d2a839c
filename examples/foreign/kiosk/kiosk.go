// Package kiosk is team K's order service for its in-store kiosks. It is a
// worker-pool server, as the team ran it before Go (a prefork server
// behind a listen backlog): a fixed number of workers, each taking one
// connection at a time off the listener, one request per connection.
// Its idempotency is correct; its capacity is what the listen backlog and
// the worker count give it, and a kiosk fleet sending more connections
// than that at once is refused by the kernel, not by the service's code.
//
//	POST /orders
//	Idempotency-Key: <key>
//	X-Store: t1
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, {"order_id":"K-7","store":"t1",...}; the same again replayed
//	→ 409 + Retry-After: 1 while the first runs
//	→ 422 for the key with another body
//
// No key gets 400. GET /admin/orders lists every order with its store and
// key.
//
// Exported API: [New], [Options], [Serve].
package kiosk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Options configure the service. The zero value is the service as the team
// ships it.
type Options struct {
	// Work is how long an order takes (default 10ms).
	Work time.Duration
}

// New returns the service's handler.
func New(o Options) http.Handler {
	if o.Work <= 0 {
		o.Work = 10 * time.Millisecond
	}
	s := &service{opts: o, records: map[string]*record{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.order)
	mux.HandleFunc("GET /admin/orders", s.list)
	return mux
}

type service struct {
	opts Options

	mu      sync.Mutex
	records map[string]*record // store + "/" + key
	orders  []order
}

// record is a key's state: its request's bytes, and its answer once done.
type record struct {
	body []byte
	done bool
	resp []byte
}

type order struct {
	ID     string `json:"order_id"`
	Store  string `json:"store"`
	Key    string `json:"idempotency_key"`
	SKU    string `json:"sku"`
	Qty    int    `json:"qty"`
	Amount int    `json:"amount"`
}

func (s *service) order(w http.ResponseWriter, r *http.Request) {
	key, store := r.Header.Get("Idempotency-Key"), r.Header.Get("X-Store")
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
	id := store + "/" + key
	s.mu.Lock()
	rec, seen := s.records[id]
	switch {
	case seen && !bytes.Equal(rec.body, body):
		s.mu.Unlock()
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "idempotency key reused with another order"})
		return
	case seen && !rec.done:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusConflict, map[string]string{"error": "an order with this key is being placed"})
		return
	case seen:
		resp := rec.resp
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(resp)
		return
	}
	rec = &record{body: body}
	s.records[id] = rec // claimed before the work
	s.mu.Unlock()

	time.Sleep(s.opts.Work)

	s.mu.Lock()
	o := order{ID: fmt.Sprintf("K-%d", len(s.orders)+1), Store: store, Key: key, SKU: req.SKU, Qty: req.Qty, Amount: req.Amount}
	s.orders = append(s.orders, o)
	rec.resp, _ = json.Marshal(o)
	rec.resp = append(rec.resp, '\n')
	rec.done = true
	resp := rec.resp
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(resp)
}

func (s *service) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"orders": append([]order{}, s.orders...)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
