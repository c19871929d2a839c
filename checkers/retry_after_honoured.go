package checkers

import (
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "retry-after-honoured", New: RetryAfterHonoured, Suites: map[string]int{SuiteClient: 6}})
}

// RetryAfterTolerance is how much earlier than a Retry-After asked an
// attempt may come and still honour it: the answer's time is taken where
// the proxy wrote it, a little before the client read it.
const RetryAfterTolerance = 50 * time.Millisecond

// RetryAfterHonoured returns the checker of "retry-after-honoured", a
// client invariant: after an answer that asked for a delay (Retry-After on
// a 429, 503 or 409), the intent's next attempt comes no sooner than that
// delay after the answer (less [RetryAfterTolerance]).
func RetryAfterHonoured(opts ...Option) Checker { return retryAfterHonoured{newConfig(opts)} }

type retryAfterHonoured struct{ cfg config }

var _ Checker = retryAfterHonoured{}

func (retryAfterHonoured) Name() string { return "retry-after-honoured" }

func (c retryAfterHonoured) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c retryAfterHonoured) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	for _, ci := range ix.client().intents {
		for j := 1; j < len(ci.attempts); j++ {
			prev, a := &h.Attempts[ci.attempts[j-1]], &h.Attempts[ci.attempts[j]]
			if prev.RetryAfterMS <= 0 || !prev.Done() {
				continue
			}
			r.Checked++
			asked := time.Duration(prev.RetryAfterMS) * time.Millisecond
			waited := time.Duration(a.Invoke - prev.Complete)
			if waited >= asked-RetryAfterTolerance {
				continue
			}
			v := ci.violation(h, c.Name(), ci.attempts[j-1:j+1])
			v.Explanation = fmt.Sprintf("intent %s's attempt %d (op %d) came %s after attempt %d (op %d) was answered %d with Retry-After asking for %s; a client must wait at least the delay it is asked for.",
				ci.id, a.Number, a.Op, ms(waited), prev.Number, prev.Op, prev.Status, ms(asked))
			v.Cause = "Retry-After is ignored: the next attempt follows the client's own backoff; read the header (seconds or an HTTP date) and wait at least that long"
			r.Violations = append(r.Violations, v)
			break
		}
	}
	return finish(r, h, "")
}
