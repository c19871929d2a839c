package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "payload-stable", New: PayloadStable, Suites: map[string]int{SuiteClient: 2}})
}

// PayloadStable returns the checker of "payload-stable", a client
// invariant: every attempt of one intent sends the same payload — the same
// bytes, or the same canonical JSON when the contract's fingerprint is
// canonical. A retry with another payload under the same key is refused by
// a correct service (422), and under a new key it is another order.
func PayloadStable(opts ...Option) Checker { return payloadStable{newConfig(opts)} }

type payloadStable struct{ cfg config }

var _ Checker = payloadStable{}

func (payloadStable) Name() string { return "payload-stable" }

func (c payloadStable) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c payloadStable) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	canonical := c.cfg.contract.Fingerprint == FingerprintCanonical
	fp := func(a *history.Attempt) uint64 {
		if canonical {
			return a.ReqCanon
		}
		return a.ReqHash
	}
	for _, ci := range ix.client().intents {
		var first *history.Attempt
		for _, i := range ci.attempts {
			a := &h.Attempts[i]
			if a.Method == "" && a.ReqHash == 0 {
				continue // no request recorded: nothing to compare
			}
			if first == nil {
				first = a
				r.Checked++
				continue
			}
			if fp(a) == fp(first) {
				continue
			}
			v := ci.violation(h, c.Name(), []int32{ci.attempts[0], i})
			how := "bytes"
			if canonical {
				how = "JSON (compared canonically)"
			}
			v.Explanation = fmt.Sprintf("intent %s's attempt %d (op %d) sent other %s than its first attempt (op %d); a retry must re-send the payload it retries as it is, or the service refuses it under the same key (422) or executes it as another order under a new one.",
				ci.id, a.Number, a.Op, how, first.Op)
			v.Cause = "the body is rebuilt for each attempt with a per-attempt field (a timestamp, a nonce, a fresh request id): build the payload once, with the key, and re-send exactly those bytes"
			r.Violations = append(r.Violations, v)
			break
		}
	}
	return finish(r, h, "")
}
