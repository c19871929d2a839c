// Package shopfront is team B's order service, modelled on a payments-style
// API: the account comes in an X-Account header, the Idempotency-Key is
// optional, creates answer 200, and a duplicate that arrives while the first
// request is still running waits for it and gets its answer instead of an
// error. Keys live in a sync.Map for a day.
//
//	POST /v1/orders
//	X-Account: t1
//	Idempotency-Key: <key>            (optional: without it, no protection)
//	{"sku":"A-100","qty":1,"amount":100}
//
//	→ 200 OK {"id":"ord_3","object":"order","account":"t1",...}
//
// Parameters are compared as parsed JSON (key order and spacing do not
// matter); a key reused with other parameters gets 400 with an
// idempotency_error. GET /effects lists every order created, as a JSON
// array.
//
// Exported API: [New], [Options].
package shopfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure the service; the zero value is what the team runs.
type Options struct {
	// TTL is how long keys are remembered (default 24h).
	TTL time.Duration
	// WaitFor bounds how long an in-flight duplicate waits for the first
	// request before it gives up with 409 (default 10s).
	WaitFor time.Duration
	// FingerprintParsed compares the order as the handler parsed it (qty
	// accepts 1, "1" and true, as the mobile app sends them) instead of
	// the JSON parameters.
	FingerprintParsed bool
	// ReplayByRerun keeps only the status of a finished request and
	// re-runs the handler to rebuild the body of a replay ("handlers are
	// idempotent anyway").
	ReplayByRerun bool
}

// New returns the service's handler.
func New(o Options) http.Handler {
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.WaitFor <= 0 {
		o.WaitFor = 10 * time.Second
	}
	a := &api{opts: o}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/orders", a.create)
	mux.HandleFunc("GET /effects", a.effects)
	return mux
}

type api struct {
	opts   Options
	keys   sync.Map // account + "\n" + key → *entry
	seq    atomic.Int64
	mu     sync.Mutex
	orders []effect
}

type entry struct {
	params   string
	started  time.Time
	done     chan struct{} // closed when the first request finished
	status   int
	body     []byte
	released bool // the first request failed: the key is free again
}

type effect struct {
	Account string `json:"account"`
	Key     string `json:"idempotency_key,omitempty"`
	ID      string `json:"id"`
}

// flexInt is a quantity as clients send it: 2, "2" or true (one).
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*f = flexInt(x)
	case string:
		n, err := strconv.Atoi(x)
		if err != nil {
			return fmt.Errorf("qty %q is not a number", x)
		}
		*f = flexInt(n)
	case bool:
		*f = 0
		if x {
			*f = 1
		}
	default:
		return fmt.Errorf("qty must be a number")
	}
	return nil
}

type orderParams struct {
	SKU    string  `json:"sku"`
	Qty    flexInt `json:"qty"`
	Amount int64   `json:"amount"`
}

type orderObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Account string `json:"account"`
	SKU     string `json:"sku"`
	Qty     int    `json:"qty"`
	Amount  int64  `json:"amount"`
	Created int64  `json:"created"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	account := r.Header.Get("X-Account")
	if account == "" {
		apiError(w, http.StatusUnauthorized, "authentication_error", "X-Account header required")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "unreadable body")
		return
	}
	var p orderParams
	if err := json.Unmarshal(raw, &p); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		status, body := a.placeOrder(account, "", p)
		send(w, status, body, false)
		return
	}
	params, ok := canonical(raw)
	if a.opts.FingerprintParsed {
		b, _ := json.Marshal(p)
		params, ok = string(b), true
	}
	if !ok {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
		return
	}
	id := account + "\n" + key
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.WaitFor)
	defer cancel()
	for {
		mine := &entry{params: params, started: time.Now(), done: make(chan struct{})}
		got, loaded := a.keys.LoadOrStore(id, mine)
		e := got.(*entry)
		if loaded && time.Since(e.started) > a.opts.TTL {
			a.keys.CompareAndDelete(id, e)
			continue
		}
		if !loaded {
			a.runFirst(w, e, account, key, p)
			return
		}
		if e.params != params {
			apiError(w, http.StatusBadRequest, "idempotency_error",
				"Keys for idempotent requests can only be used with the same parameters they were first used with.")
			return
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			apiError(w, http.StatusConflict, "idempotency_error", "a request with this key is still being processed")
			return
		}
		if e.released {
			continue // the first failed and gave the key back: try again
		}
		if a.opts.ReplayByRerun {
			_, body := a.placeOrder(account, key, p)
			send(w, e.status, body, true)
			return
		}
		send(w, e.status, e.body, true)
		return
	}
}

// runFirst executes the request that owns the key and publishes its answer
// to the duplicates waiting for it.
func (a *api) runFirst(w http.ResponseWriter, e *entry, account, key string, p orderParams) {
	status, body := a.placeOrder(account, key, p)
	e.status = status
	if !a.opts.ReplayByRerun {
		e.body = body
	}
	if status >= 500 {
		e.released = true
		a.keys.CompareAndDelete(account+"\n"+key, e)
	}
	close(e.done)
	send(w, status, body, false)
}

func (a *api) placeOrder(account, key string, p orderParams) (int, []byte) {
	if p.SKU == "" || p.Qty <= 0 {
		return errorBody(http.StatusBadRequest, "invalid_request_error", "sku and qty are required")
	}
	time.Sleep(15 * time.Millisecond) // inventory reservation
	o := orderObject{ID: fmt.Sprintf("ord_%d", a.seq.Add(1)), Object: "order", Account: account,
		SKU: p.SKU, Qty: int(p.Qty), Amount: p.Amount, Created: time.Now().Unix()}
	a.mu.Lock()
	a.orders = append(a.orders, effect{Account: account, Key: key, ID: o.ID})
	a.mu.Unlock()
	body, _ := json.Marshal(o)
	return http.StatusOK, body
}

func (a *api) effects(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	body, _ := json.Marshal(append([]effect{}, a.orders...))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// canonical re-encodes a JSON document with sorted keys and no spacing.
func canonical(raw []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", false
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return "", false
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

func send(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func errorBody(status int, typ, msg string) (int, []byte) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
	return status, b
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	s, b := errorBody(status, typ, msg)
	send(w, s, b, false)
}
