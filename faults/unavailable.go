package faults

import (
	"context"
	"time"
)

func init() { Register("unavailable", func() Fault { return &Unavailable{} }) }

// Unavailable answers the attempts it hits 503 without forwarding them,
// with a Retry-After: an overloaded upstream's "not executed, come back
// later" (aimed at a fraction of intents, or timed: an outage hitting
// every intent at once). Client scenarios only.
type Unavailable struct {
	// RetryAfter is the advertised wait (default 1s; 0s sends none, with
	// no_retry_after).
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after"`
	// NoRetryAfter sends no Retry-After header at all.
	NoRetryAfter bool `yaml:"no_retry_after" json:"no_retry_after"`
	errorShape   `yaml:",inline"`
	_            struct{}
}

var (
	_ ClientPath = (*Unavailable)(nil)
	_ ClientOnly = (*Unavailable)(nil)
)

// Kind implements [Fault].
func (*Unavailable) Kind() string { return "unavailable" }

// ClientOnly implements [ClientOnly].
func (*Unavailable) ClientOnly() {}

// Validate implements [Fault].
func (f *Unavailable) Validate() error {
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
func (*Unavailable) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*Unavailable) Heal(context.Context, World) error { return nil }

// ClientAnswer implements [ClientPath].
func (f *Unavailable) ClientAnswer() Answer {
	return Answer{Status: 503, Code: "unavailable", RetryAfter: f.RetryAfter, Headers: f.headers(), Body: f.Body}
}
