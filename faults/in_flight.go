package faults

import "time"

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
	proxyAnswer
	_ struct{}
}

var (
	_ ClientPath = (*InFlight)(nil)
	_ ClientOnly = (*InFlight)(nil)
)

// Kind implements [Fault].
func (*InFlight) Kind() string { return "in-flight" }

// Validate implements [Fault].
func (f *InFlight) Validate() error {
	return comeBackLater(f.Kind(), &f.RetryAfter, f.NoRetryAfter)
}

// ClientAnswer implements [ClientPath].
func (f *InFlight) ClientAnswer() Answer {
	return Answer{Status: 409, Code: "request_in_progress", RetryAfter: f.RetryAfter, Headers: f.headers(), Body: f.Body}
}
