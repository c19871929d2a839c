package driver

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Model is how a simulated client behaves when an attempt does not succeed.
type Model string

const (
	// Correct generates the key once per intent and reuses it on every retry;
	// it retries network errors, 408, 429, 5xx and the in-flight status
	// (with or without Retry-After), with exponential backoff and full
	// jitter, until its retry budget runs out, and never retries any other 4xx.
	Correct Model = "correct"
	// KeyPerAttempt is the classic bug: a new key on every retry.
	KeyPerAttempt Model = "key-per-attempt"
	// Retry4xx retries every non-2xx answer, 4xx included.
	Retry4xx Model = "retry-4xx"
)

// Models lists the client models.
func Models() []Model { return []Model{Correct, KeyPerAttempt, Retry4xx} }

// Valid reports whether m is a known model.
func (m Model) Valid() bool {
	for _, k := range Models() {
		if m == k {
			return true
		}
	}
	return false
}

// RetryPolicy bounds retries: exponential backoff with full jitter.
type RetryPolicy struct {
	// MaxAttempts per intent, first attempt included (default 40).
	MaxAttempts int `json:"max_attempts" yaml:"max_attempts"`
	// Base is the first backoff ceiling (default 25ms); it doubles per retry.
	Base time.Duration `json:"base" yaml:"base"`
	// Max caps the backoff ceiling (default 500ms).
	Max time.Duration `json:"max" yaml:"max"`
	// MaxRetryAfter caps how long a server's Retry-After is honoured (default 2s).
	MaxRetryAfter time.Duration `json:"max_retry_after" yaml:"max_retry_after"`
	// Budget stops the retries of an intent once an attempt was sent this
	// long after its first (default 7s: past the checkers' default 5s
	// decision bound, so that a slow key is judged, not abandoned). An
	// overdue key stops earlier (see [Config.DecisionBound]).
	Budget time.Duration `json:"budget" yaml:"budget"`
	_      struct{}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 40
	}
	if p.Budget <= 0 {
		p.Budget = 7 * time.Second
	}
	if p.Base <= 0 {
		p.Base = 25 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 500 * time.Millisecond
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 2 * time.Second
	}
	return p
}

// backoff returns the wait before retry n (n = 1 for the first retry): full
// jitter, a uniform draw in [0, min(Max, Base·2^(n-1))], or the server's
// Retry-After when it asked for longer.
func (p RetryPolicy) backoff(rng *rand.Rand, n int, retryAfter time.Duration) time.Duration {
	ceil := p.Base << min(n-1, 30)
	if ceil > p.Max || ceil <= 0 {
		ceil = p.Max
	}
	d := time.Duration(rng.Int64N(int64(ceil) + 1))
	if retryAfter > d {
		d = min(retryAfter, p.MaxRetryAfter)
	}
	return d
}

// retryable says whether the model sends another attempt after this ending.
// status is 0 when no response arrived; refuse is the status of a service
// that refuses every repeat (0: none).
func (m Model) retryable(status, inFlight, refuse int) bool {
	switch {
	case status == 0:
		return true
	case status >= 200 && status < 300:
		return false
	case m == Retry4xx:
		return true
	case refuse != 0 && status == refuse:
		return false // the service's final answer to every repeat
	case status >= 500 || status == 408 || status == 429:
		return true
	case status == inFlight:
		// "Still processing" is an answer to come, Retry-After or not.
		return true
	}
	return false
}

// keyFor returns the key attempt n of an intent carries.
func (m Model) keyFor(key string, n int) string {
	if m == KeyPerAttempt && n > 1 && key != "" {
		return key + "-r" + strconv.Itoa(n)
	}
	return key
}

// parseRetryAfter reads a Retry-After header in seconds (HTTP dates are not
// worth the complexity for a test client).
func parseRetryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s < 0 {
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}

func (m Model) String() string { return string(m) }

func validModel(m Model) error {
	if !m.Valid() {
		return fmt.Errorf("%w: unknown client model %q (known: correct, key-per-attempt, retry-4xx)", ErrConfig, m)
	}
	return nil
}
