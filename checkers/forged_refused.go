package checkers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	// In no suite: it judges a webhook step's forged events and runs when
	// a scenario names it (a webhook scenario does by default).
	Register(Registration{Name: "forged-refused", New: ForgedRefused})
}

// FaultForgedSignature is the fault event a webhook step writes for each
// delivery it signed with a wrong secret: the attempt it names is a
// forged event.
const FaultForgedSignature = "forged-signature"

// ForgedRefused returns the checker of "forged-refused": a webhook event
// that was not signed with the provider's secret (a forged-signature fault
// names its attempt) has no effect — the endpoint verifies the signature
// before it writes anything (seed 002 §八 ①, "验签"). Its effects are
// those attributed to the forged event's intent, or to its tenant and key.
// A forged event answered 2xx without an effect holds, noted: a 4xx tells
// the sender it was refused.
func ForgedRefused(opts ...Option) Checker { return forgedRefused{} }

type forgedRefused struct{}

var _ Checker = forgedRefused{}

func (forgedRefused) Name() string { return "forged-refused" }

const causeNoSignatureCheck = "the handler does not verify the provider's signature (or verifies it after applying the event): anyone who can reach the endpoint can post events"

func (c forgedRefused) Check(h *history.History, effects []history.Effect) Result {
	r := Result{Name: c.Name()}
	ops := map[int64]bool{}
	for _, f := range h.Faults {
		if f.Kind == FaultForgedSignature && f.Action != "heal" && f.Op != 0 {
			ops[f.Op] = true
		}
	}
	if len(ops) == 0 {
		r.Reason = "the history records no forged event (no " + FaultForgedSignature + " fault): nothing to refuse"
		return finish(Part{Result: r}, h, "").Result
	}
	if h.Meta.EffectsUnread || (!h.EffectsKnown && len(effects) == 0) {
		r.Verdict = Unknown
		r.Reason = "the history records no effects, so whether a forged event had one cannot be known"
		return r
	}
	var accepted []string
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if !ops[a.Op] {
			continue
		}
		r.Checked++
		var fx []string
		for _, e := range effects {
			if e.Intent == a.Intent || e.Intent == "" && e.Tenant == a.Tenant && e.Key == a.Key && a.Key != "" {
				fx = append(fx, e.ID)
			}
		}
		answer := "got no answer (" + a.Outcome.String() + ")"
		if a.Outcome == history.OK {
			answer = "was answered " + strconv.Itoa(a.Status)
		}
		if len(fx) == 0 {
			if a.Outcome == history.OK && a.Status/100 == 2 {
				accepted = append(accepted, strings.TrimPrefix(a.Intent, "key:")+" ("+strconv.Itoa(a.Status)+")")
			}
			continue
		}
		r.Violations = append(r.Violations, Violation{
			Invariant: c.Name(), Tenant: a.Tenant, Method: a.Method, Path: a.Path, Key: a.Key, Intent: a.Intent, Ops: []int64{a.Op},
			Explanation: fmt.Sprintf("forged event %s (signed with a wrong secret, op %d) %s and produced %s: an event whose signature does not verify must be refused before anything is written.",
				a.Intent, a.Op, answer, strings.Join(fx, ", ")),
			Cause: causeNoSignatureCheck,
		})
	}
	if len(accepted) > 0 {
		r.Reason = fmt.Sprintf("forged events answered 2xx without an effect: %s (a 4xx says it was refused)", strings.Join(accepted, ", "))
	}
	return finish(Part{Result: r}, h, "").Result
}
