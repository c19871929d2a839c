package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "keyed-retry", New: KeyedRetry, Suites: map[string]int{SuiteClient: 4}})
}

// KeyedRetry returns the checker of "keyed-retry", a client invariant: a
// write re-sent after an indeterminate outcome (no answer, a reset, a
// timeout, a gateway's 500/502/504, a 5xx the proxy gave after the
// upstream executed) carries an idempotency key. Without one, the service
// cannot tell the re-send from a new order.
func KeyedRetry(opts ...Option) Checker { return keyedRetry{newConfig(opts)} }

type keyedRetry struct{ cfg config }

var _ Checker = keyedRetry{}

func (keyedRetry) Name() string { return "keyed-retry" }

func (c keyedRetry) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c keyedRetry) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	for _, ci := range ix.client().intents {
		if len(ci.attempts) < 2 {
			continue
		}
		r.Checked++
		for j := 1; j < len(ci.attempts); j++ {
			prev, a := &h.Attempts[ci.attempts[j-1]], &h.Attempts[ci.attempts[j]]
			if a.Key != "" || !indeterminateForClient(prev) {
				continue
			}
			v := ci.violation(h, c.Name(), ci.attempts[j-1:j+1])
			v.Key = ""
			v.Explanation = fmt.Sprintf("intent %s's attempt %d (op %d) re-sent the %s without an idempotency key after attempt %d (op %d) ended with %s, an outcome that does not tell the client whether the order was created; without a key the service cannot tell the re-send from a new order.",
				ci.id, a.Number, a.Op, orDefault(a.Method, "request"), prev.Number, prev.Op, ending(prev))
			v.Cause = "a blind re-send of a keyless POST after a 502/504 or a lost answer: send an idempotency key (minted once per intent) with every write, or do not retry a write that may have executed"
			r.Violations = append(r.Violations, v)
			break
		}
	}
	return finish(r, h, "")
}
