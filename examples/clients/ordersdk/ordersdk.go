// Package ordersdk is a hand-written Go SDK for an orders API, the kind a
// platform team writes once and every service then imports: one
// CreateOrder call with an idempotency key, retries with exponential
// backoff and full jitter, Retry-After honoured, permanent errors not
// retried, one budget for the whole call, and an honest answer when the
// outcome is unknown.
//
// It is one of the clients of the examples/clients corpus. Its options
// switch on, one at a time, the caller-side mistakes the design articles
// list (a key minted per attempt, a key hashed from the body, 4xx retried,
// Retry-After ignored, a timeout reported as a failure, …), each the way a
// team really writes it, so that idemchaos is judged on a flaw that is
// really in the code. It shares nothing with idemchaos.
package ordersdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Flaws switch on one caller-side mistake each. The zero value is the
// correct SDK.
type Flaws struct {
	// KeyPerAttempt builds the request, key included, inside the retry
	// loop: every attempt carries a new key.
	KeyPerAttempt bool
	// KeyFromBody derives the key from a hash of the body: two real orders
	// with the same items share one key.
	KeyFromBody bool
	// NoKey sends no Idempotency-Key at all and re-sends blindly.
	NoKey bool
	// RetryEverything retries every non-2xx answer, 4xx included.
	RetryEverything bool
	// IgnoreRetryAfter waits its own short backoff whatever the server asks.
	IgnoreRetryAfter bool
	// NoJitter waits exactly base·2^n: clients hit by one outage retry in
	// lockstep.
	NoJitter bool
	// StampEachAttempt adds the send time to the body of every attempt.
	StampEachAttempt bool
	// TimeoutIsFailure reports a timeout or a lost answer as a failure.
	TimeoutIsFailure bool
	// Layered wraps the call in a second retry loop of its own (a caller
	// that "adds resilience" around an SDK that already retries).
	Layered int
}

// Client calls the orders API.
type Client struct {
	// BaseURL is the API's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Path is the create endpoint ("/v1/orders" when empty).
	Path string
	// Token is the bearer token.
	Token string
	// HTTP sends the requests (a client with a 2 s timeout when nil).
	HTTP *http.Client
	// Attempts is the budget of one call, first attempt included (4 when 0).
	Attempts int
	// Backoff is the base delay before the first retry (50 ms when 0).
	Backoff time.Duration
	// MaxBackoff caps one delay, Retry-After included (5 s when 0).
	MaxBackoff time.Duration
	// Flaws are the mistakes switched on (none by default).
	Flaws Flaws
}

// Order is what the API returns for a created order.
type Order struct {
	ID string `json:"id"`
}

// ErrUnknownOutcome says the order may or may not exist: every attempt
// ended without a definite answer (a timeout, a reset, a 5xx from a
// gateway). The caller must look it up, not create it again.
var ErrUnknownOutcome = errors.New("ordersdk: outcome unknown")

// APIError is a definite refusal from the API.
type APIError struct {
	Status int
	Code   string
	Body   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("ordersdk: %d %s", e.Status, e.Code)
}

// CreateOrder creates one order from body (a JSON object), retrying what is
// safe to retry under one key.
func (c *Client) CreateOrder(ctx context.Context, body []byte) (Order, error) {
	layers := max(c.Flaws.Layered, 1)
	key := c.key(body)
	var err error
	var o Order
	for range layers {
		if o, err = c.create(ctx, key, body); err == nil {
			return o, nil
		}
		var api *APIError
		if c.Flaws.Layered > 0 && errors.As(err, &api) && api.Status < 500 {
			return o, err
		}
	}
	return o, err
}

func (c *Client) create(ctx context.Context, key string, body []byte) (Order, error) {
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 4
	}
	var last error
	indeterminate := false
	for n := 0; n < attempts; n++ {
		if c.Flaws.KeyPerAttempt {
			key = newKey()
		}
		o, wait, err := c.attempt(ctx, key, body)
		if err == nil {
			return o, nil
		}
		last = err
		var api *APIError
		switch {
		case errors.As(err, &api) && !c.retryable(api, wait):
			return Order{}, err
		case errors.As(err, &api):
			// A gateway's 502/504 says nothing about the upstream: it may
			// have executed.
			indeterminate = indeterminate || api.Status == 502 || api.Status == 504 || api.Status == 500
		default:
			indeterminate = true
		}
		if n == attempts-1 {
			break
		}
		if !sleep(ctx, c.delay(n, wait)) {
			last = ctx.Err()
			indeterminate = true
			break
		}
	}
	if indeterminate && !c.Flaws.TimeoutIsFailure {
		return Order{}, fmt.Errorf("%w: %w", ErrUnknownOutcome, last)
	}
	return Order{}, last
}

func (c *Client) key(body []byte) string {
	switch {
	case c.Flaws.NoKey:
		return ""
	case c.Flaws.KeyFromBody:
		sum := sha256.Sum256(body)
		return "ord-" + hex.EncodeToString(sum[:16])
	}
	return newKey()
}

func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// retryable says whether an answer may be re-sent as it is: 408, 425, 429
// and 5xx (the key makes the 5xx safe), a 409 that says the first request
// with this key is still running, never another 4xx.
func (c *Client) retryable(e *APIError, wait time.Duration) bool {
	if c.Flaws.RetryEverything {
		return true
	}
	switch e.Status {
	case 408, 425, 429:
		return true
	case 409:
		return wait > 0 || e.Code == "request_in_progress"
	}
	return e.Status >= 500 && e.Status != 501
}

// delay is the wait before retry n+1: what the server asked for if it
// asked, else exponential with full jitter.
func (c *Client) delay(n int, asked time.Duration) time.Duration {
	base := c.Backoff
	if base <= 0 {
		base = 50 * time.Millisecond
	}
	ceiling := c.MaxBackoff
	if ceiling <= 0 {
		ceiling = 5 * time.Second
	}
	if c.Flaws.IgnoreRetryAfter {
		return base
	}
	d := time.Duration(float64(base) * math.Pow(2, float64(n)))
	if !c.Flaws.NoJitter {
		// Full jitter: uniform in [d/2, d·3/2) keeps the growth and spreads
		// clients hit at once.
		d = d/2 + time.Duration(mrand.Int64N(int64(d)))
	}
	d = max(d, asked)
	return min(d, ceiling)
}

func (c *Client) attempt(ctx context.Context, key string, body []byte) (Order, time.Duration, error) {
	path := c.Path
	if path == "" {
		path = "/v1/orders"
	}
	if c.Flaws.StampEachAttempt {
		body = stamp(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return Order{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Order{}, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Order{}, 0, err
	}
	if resp.StatusCode/100 == 2 {
		var o Order
		if err := json.Unmarshal(data, &o); err != nil {
			return Order{}, 0, fmt.Errorf("ordersdk: decode order: %w", err)
		}
		return o, 0, nil
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return Order{}, retryAfter(resp.Header.Get("Retry-After")), &APIError{Status: resp.StatusCode, Code: e.Error, Body: string(data)}
}

// stamp adds "sent_at" to a JSON object body.
func stamp(body []byte) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	m["sent_at"] = time.Now().UTC().Format(time.RFC3339Nano)
	out, _ := json.Marshal(m)
	return out
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP-date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// DefaultHTTP is the HTTP client the SDK recommends: a timeout per attempt
// and connections kept alive between attempts.
func DefaultHTTP(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout}
}
