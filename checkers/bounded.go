package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "bounded", New: Bounded, Suites: map[string]int{SuiteClient: 8}})
}

// Bounded returns the checker of "bounded", a client invariant: each
// intent sends at most the contract's budget of attempts (the first and
// its retries), and the run at most its global budget (intents × budget
// unless the contract says global_budget).
func Bounded(opts ...Option) Checker { return bounded{newConfig(opts)} }

type bounded struct{ cfg config }

var _ Checker = bounded{}

func (bounded) Name() string { return "bounded" }

func (c bounded) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c bounded) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	cc := c.cfg.clientContract(h)
	cv := ix.client()
	total, intents := 0, 0
	for _, ci := range cv.intents {
		n := len(ci.attempts)
		if n == 0 {
			continue
		}
		intents++
		total += n
		r.Checked++
		if n <= cc.Budget {
			continue
		}
		v := ci.violation(h, c.Name(), ci.attempts)
		v.Explanation = fmt.Sprintf("intent %s sent %d attempts where its budget is %d (the first and %d retries); a client's retries must stop within the budget it declares.",
			ci.id, n, cc.Budget, cc.Budget-1)
		v.Cause = "retries stacked in layers: a retry loop around a client (an SDK, an HTTP library) that already retries multiplies the attempts; keep one retry loop with one budget, or a retry limit above the declared budget"
		r.Violations = append(r.Violations, v)
	}
	r.t.attempts, r.t.intents, r.t.global = total, intents, cc.GlobalBudget
	if c.cfg.globals != nil {
		// One part of the history: the run's total is the merge's to judge.
		return finish(r, h, "")
	}
	return settleBounded(r, h)
}

// settleBounded judges the run's total against the global budget: the end
// of a check of the whole history, and of a merge of checked parts.
func settleBounded(r Part, h *history.History) Part {
	if total := r.t.attempts; r.t.global > 0 && total > r.t.global {
		v := Violation{Invariant: r.Name}
		v.Explanation = fmt.Sprintf("the run's %d intents sent %d attempts in all where the global budget is %d; a client's retries must stay within the budget of the whole run.",
			r.t.intents, total, r.t.global)
		v.Cause = "retries stacked in layers, or retry loops that share no budget (each call retries on its own while the upstream is down), multiply the load an outage brings"
		r.Violations = append(r.Violations, v)
	}
	return finish(r, h, "")
}

// mergeParts adds up the parts' attempts and judges the global budget.
func (bounded) mergeParts(r Part, _ []Part, h *history.History) Part {
	if r.t.early != "" {
		return finish(r, h, r.t.early)
	}
	return settleBounded(r, h)
}
