package faults

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

func init() { Register("rate-limit", func() Fault { return &RateLimit{} }) }

// RateLimit is a gateway that answers the aimed attempt 429 with Retry-After
// without forwarding it: a definite "not executed, try later".
type RateLimit struct {
	// RetryAfter is the advertised wait (default 1s; sent in whole seconds,
	// rounded up).
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after"`
	hop        hop
	_          struct{}
}

var _ Aimed = (*RateLimit)(nil)

// Kind implements [Fault].
func (*RateLimit) Kind() string { return "rate-limit" }

// Validate implements [Fault].
func (f *RateLimit) Validate() error {
	if f.RetryAfter < 0 {
		return invalid(f.Kind(), "retry_after must be ≥ 0, got %s", f.RetryAfter)
	}
	if f.RetryAfter == 0 {
		f.RetryAfter = time.Second
	}
	return nil
}

// Apply implements [Fault]; the limiter acts through Route.
func (*RateLimit) Apply(context.Context, World) error { return nil }

// Heal implements [Fault]: it stops the hop.
func (f *RateLimit) Heal(ctx context.Context, _ World) error { return f.hop.close(ctx) }

// Route implements [Aimed].
func (f *RateLimit) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	secs := strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds())))
	url, err := f.hop.start(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Retry-After", secs)
		rw.Header().Set("Content-Type", "text/plain")
		rw.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintln(rw, "429 from the gateway (idemchaos rate-limit)")
	}))
	if err != nil {
		return Route{}, err
	}
	w.Record(f.Kind(), "fire", a.Op, map[string]any{"retry_after": secs})
	return Route{BaseURL: url, Fresh: true}, nil
}

// ClientAnswer implements [ClientPath]: 429 with Retry-After, never
// forwarded, in the upstream's error shape.
func (f *RateLimit) ClientAnswer() Answer {
	return Answer{Status: http.StatusTooManyRequests, Code: "rate_limited", RetryAfter: f.RetryAfter}
}
