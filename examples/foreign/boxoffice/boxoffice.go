// Package boxoffice is team B's booking service. Its design refuses every
// repeat of a key: the first request with a key is executed, and anything
// later with the same key — an identical retry after success, a duplicate
// while the first runs, another body — gets 412 Precondition Failed. It
// never replays: a client that lost the answer looks its booking up
// elsewhere (not part of this API).
//
//	POST /bookings
//	Idempotency-Key: <key>
//	X-Customer: t1
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 201 Created, {"booking_id":"B-7","customer":"t1",...}
//	→ 412 {"error":"idempotency key already used"}   (any repeat)
//
// No key gets 400. GET /admin/bookings lists every booking with its
// customer and key.
//
// Exported API: [New], [Options].
package boxoffice

import (
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
	// ClaimAfterWrite looks the key up, books, and only then records the
	// key (the first release): copies that arrive together all book.
	ClaimAfterWrite bool
	// Work is how long a booking takes (default 10ms).
	Work time.Duration
	// Venue, when set, is the venue's seat hold in place of the timed one
	// (tests hold bookings running with it).
	Venue func()
}

// New returns the service's handler.
func New(o Options) http.Handler {
	if o.Work <= 0 {
		o.Work = 10 * time.Millisecond
	}
	s := &service{opts: o, keys: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bookings", s.book)
	mux.HandleFunc("GET /admin/bookings", s.list)
	return mux
}

type service struct {
	opts Options

	mu       sync.Mutex
	keys     map[string]bool // customer + "/" + key: used
	bookings []booking
}

type booking struct {
	ID       string `json:"booking_id"`
	Customer string `json:"customer"`
	Key      string `json:"idempotency_key"`
	SKU      string `json:"sku"`
	Qty      int    `json:"qty"`
	Amount   int    `json:"amount"`
}

func (s *service) book(w http.ResponseWriter, r *http.Request) {
	key, customer := r.Header.Get("Idempotency-Key"), r.Header.Get("X-Customer")
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
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid booking"})
		return
	}
	id := customer + "/" + key
	s.mu.Lock()
	used := s.keys[id]
	if !used && !s.opts.ClaimAfterWrite {
		s.keys[id] = true // claimed before the work: every repeat is refused
	}
	s.mu.Unlock()
	if used {
		writeJSON(w, http.StatusPreconditionFailed, map[string]string{"error": "idempotency key already used"})
		return
	}
	if s.opts.Venue != nil { // seats are held at the venue
		s.opts.Venue()
	} else {
		time.Sleep(s.opts.Work)
	}
	s.mu.Lock()
	b := booking{ID: fmt.Sprintf("B-%d", len(s.bookings)+1), Customer: customer, Key: key, SKU: req.SKU, Qty: req.Qty, Amount: req.Amount}
	s.bookings = append(s.bookings, b)
	s.keys[id] = true
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, b)
}

func (s *service) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"bookings": append([]booking{}, s.bookings...)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
