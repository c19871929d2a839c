package faults

import "time"

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
	proxyAnswer
	_ struct{}
}

var (
	_ ClientPath = (*Unavailable)(nil)
	_ ClientOnly = (*Unavailable)(nil)
)

// Kind implements [Fault].
func (*Unavailable) Kind() string { return "unavailable" }

// Validate implements [Fault].
func (f *Unavailable) Validate() error {
	return comeBackLater(f.Kind(), &f.RetryAfter, f.NoRetryAfter)
}

// ClientAnswer implements [ClientPath].
func (f *Unavailable) ClientAnswer() Answer {
	return Answer{Status: 503, Code: "unavailable", RetryAfter: f.RetryAfter, Headers: f.headers(), Body: f.Body}
}
