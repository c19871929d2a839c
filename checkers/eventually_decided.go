package checkers

import (
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// EventuallyDecided returns the checker of "eventually-decided": after the
// faults heal, retries of a key get a definite answer (a success or a
// rejection, not the in-flight status, 429 or 5xx) within the decision bound
// (default 5s, see [WithDecisionBound]).
//
// The clock for a key starts at its first attempt after the last heal event
// that precedes its last attempt (or at its first attempt when nothing
// healed). Attempts a fault was aimed at are not evidence either way. A key
// whose client stopped asking before the bound ran out cannot be judged;
// when more than half the keys are like that the verdict is unknown.
func EventuallyDecided(opts ...Option) Checker { return eventuallyDecided{newConfig(opts)} }

type eventuallyDecided struct{ cfg config }

var _ Checker = eventuallyDecided{}

func (eventuallyDecided) Name() string { return "eventually-decided" }

func (c eventuallyDecided) Check(h *history.History, _ []history.Effect) Result {
	r := Result{Name: c.Name()}
	var heals []int64
	hit := make(map[int64]bool)
	for _, f := range h.Faults {
		if f.Action == "heal" {
			heals = append(heals, f.NS)
		}
		if f.Op != 0 {
			hit[f.Op] = true
		}
	}
	bound := int64(c.cfg.decisionBound)
	undecidable := 0
	order, groups := groupByScope(h)
	for _, s := range order {
		idx := groups[s]
		var last int64
		for _, i := range idx {
			last = max(last, h.Attempts[i].Invoke)
		}
		var healed int64
		for _, t := range heals {
			if t <= last && t > healed {
				healed = t
			}
		}
		first, lastAsked, decided := int64(-1), int64(-1), int64(-1)
		var ops []int64
		for _, i := range idx {
			a := &h.Attempts[i]
			if a.Invoke < healed || hit[a.Op] {
				continue
			}
			ops = append(ops, a.Op)
			if first < 0 || a.Invoke < first {
				first = a.Invoke
			}
			lastAsked = max(lastAsked, a.Invoke)
			if cl := classify(a, c.cfg.profile); (cl == succeeded || cl == rejected) && a.Outcome == history.OK {
				if decided < 0 || a.Complete < decided {
					decided = a.Complete
				}
			}
		}
		if first < 0 {
			continue
		}
		r.Checked++
		switch {
		case decided >= 0 && decided-first <= bound:
		case decided >= 0:
			r.Violations = append(r.Violations, c.violation(h, s, ops, fmt.Sprintf("got its first definite answer only %s after its first attempt", time.Duration(decided-first).Round(time.Millisecond)), healed))
		case lastAsked-first >= bound:
			r.Violations = append(r.Violations, c.violation(h, s, ops, fmt.Sprintf("was still undecided %s after its first attempt (answers: %s)", time.Duration(lastAsked-first).Round(time.Millisecond), answersOps(h, idx, ops)), healed))
		default:
			undecidable++
		}
	}
	unknown := ""
	if r.Checked > 0 && len(r.Violations) == 0 && undecidable*2 > r.Checked {
		unknown = fmt.Sprintf("%d of %d keys stopped retrying before the %s bound without a definite answer, too many to judge", undecidable, r.Checked, c.cfg.decisionBound)
	} else if undecidable > 0 {
		r.Reason = fmt.Sprintf("%d %s stopped retrying before the bound and %s not judged", undecidable, plural(undecidable, "key", "keys"), plural(undecidable, "was", "were"))
	}
	return finish(r, h, unknown)
}

func (c eventuallyDecided) violation(h *history.History, s scope, ops []int64, what string, healed int64) Violation {
	since := "its first attempt"
	if healed > 0 {
		since = "the faults healed at " + at(healed)
	}
	return Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Ops: ops,
		Explanation: fmt.Sprintf("%s %s, counting from %s; a retry must get a definite answer within %s.",
			describeScope(s), what, since, c.cfg.decisionBound),
		Cause: "a 'processing' record whose holder died has no lease, so it blocks every retry forever",
	}
}

func answersOps(h *history.History, idx []int32, ops []int64) string {
	want := make(map[int64]bool, len(ops))
	for _, o := range ops {
		want[o] = true
	}
	var sel []int32
	for _, i := range idx {
		if want[h.Attempts[i].Op] {
			sel = append(sel, i)
		}
	}
	if len(sel) > 6 {
		return answers(h, sel[:6]) + ", …"
	}
	return answers(h, sel)
}
