package faults

import (
	"context"
	"time"
)

func init() { Register("in-flight", func() Fault { return &InFlight{} }) }

// InFlight answers the attempts it hits 409 "a request with this key is
// being processed" without forwarding them, with or without Retry-After:
// a correct client waits and re-sends the same request. Client scenarios
// only.
type InFlight struct {
	// RetryAfter is the advertised wait (default 1s).
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after"`
	// NoRetryAfter sends no Retry-After header.
	NoRetryAfter bool `yaml:"no_retry_after" json:"no_retry_after"`
	errorShape   `yaml:",inline"`
	_            struct{}
}

var (
	_ ClientPath = (*InFlight)(nil)
	_ ClientOnly = (*InFlight)(nil)
)

// Kind implements [Fault].
func (*InFlight) Kind() string { return "in-flight" }

// ClientOnly implements [ClientOnly].
func (*InFlight) ClientOnly() {}

// Validate implements [Fault].
func (f *InFlight) Validate() error {
	if f.RetryAfter < 0 {
		return invalid(f.Kind(), "retry_after must be ≥ 0, got %s", f.RetryAfter)
	}
	if f.RetryAfter == 0 && !f.NoRetryAfter {
		f.RetryAfter = time.Second
	}
	if f.NoRetryAfter {
		f.RetryAfter = 0
	}
	return nil
}

// Apply implements [Fault]; the proxy acts from ClientAnswer.
func (*InFlight) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*InFlight) Heal(context.Context, World) error { return nil }

// ClientAnswer implements [ClientPath].
func (f *InFlight) ClientAnswer() Answer {
	return Answer{Status: 409, Code: "request_in_progress", RetryAfter: f.RetryAfter, Headers: f.headers(), Body: f.Body}
}
