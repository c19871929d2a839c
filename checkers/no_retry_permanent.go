package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "no-retry-permanent", New: NoRetryPermanent, Suites: map[string]int{SuiteClient: 5}})
}

// NoRetryPermanent returns the checker of "no-retry-permanent", a client
// invariant: after an answer with a permanent status (the contract's
// permanent_statuses: 400, 401, 403, 404, 422 by default), the intent's
// next attempt does not re-send the same payload as it is. 408, 425 and
// 429 are retryable; headers are redacted, so a 401 is judged like the
// others (a retry with new credentials cannot be told apart).
func NoRetryPermanent(opts ...Option) Checker { return noRetryPermanent{newConfig(opts)} }

type noRetryPermanent struct{ cfg config }

var _ Checker = noRetryPermanent{}

func (noRetryPermanent) Name() string { return "no-retry-permanent" }

func (c noRetryPermanent) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c noRetryPermanent) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	cc := c.cfg.clientContract(h)
	for _, ci := range ix.client().intents {
		if len(ci.attempts) == 0 {
			continue
		}
		r.Checked++
		for j := 1; j < len(ci.attempts); j++ {
			prev, a := &h.Attempts[ci.attempts[j-1]], &h.Attempts[ci.attempts[j]]
			if prev.Outcome != history.OK || !cc.permanent(prev.Status) || a.Method == "" || a.ReqHash != prev.ReqHash {
				continue
			}
			v := ci.violation(h, c.Name(), ci.attempts[j-1:j+1])
			key := "under the same key"
			if a.Key != prev.Key {
				key = "under a new key"
			}
			v.Explanation = fmt.Sprintf("intent %s's attempt %d (op %d) re-sent the same payload %s after attempt %d (op %d) was answered %d, a permanent status: the same request will get the same answer, so the retry only adds load.",
				ci.id, a.Number, a.Op, key, prev.Number, prev.Op, prev.Status)
			v.Cause = "a 4xx retried as it is: the retry policy retries every non-2xx (a blanket error check); retry only 408, 425, 429 and 5xx, and a 401 only with new credentials"
			r.Violations = append(r.Violations, v)
			break
		}
	}
	return finish(r, h, "")
}
