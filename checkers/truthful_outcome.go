package checkers

import (
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "truthful-outcome", New: TruthfulOutcome, Suites: map[string]int{SuiteClient: 9}})
}

// TruthfulOutcome returns the checker of "truthful-outcome", a client
// invariant: what the client told its caller agrees with what the upstream
// did. "Succeeded" for an intent with no effect and "failed" for one with
// an effect are both violations; "unknown" (exit 75) is counted, and is a
// violation only when the client contract says unknown: forbidden.
func TruthfulOutcome(opts ...Option) Checker { return truthfulOutcome{newConfig(opts)} }

type truthfulOutcome struct{ cfg config }

var _ Checker = truthfulOutcome{}

func (truthfulOutcome) Name() string { return "truthful-outcome" }

func (c truthfulOutcome) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c truthfulOutcome) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := notClient(h, "what the client believed"); why != "" {
		return early(r, h, why)
	}
	if h.Meta.EffectsUnread || (!h.EffectsKnown && len(ix.effects) == 0) {
		return early(r, h, "the history does not record the upstream's effects, so what the client believed cannot be compared with what happened")
	}
	cc := c.cfg.clientContract(h)
	cv := ix.client()
	var owner map[tenantKey]int32 // built on the first success without an effect
	unknown, silent := 0, 0
	for g := range cv.intents {
		ci := &cv.intents[g]
		b := ci.beliefOf(h)
		if b == nil {
			if len(ci.attempts) > 0 {
				silent++
			}
			continue
		}
		r.Checked++
		executed := len(ci.effects) > 0
		var v Violation
		switch {
		case b.Belief == history.BeliefSuccess && !executed:
			if owner == nil {
				owner = keyOwners(h, cv)
			}
			v = ci.violation(h, c.Name(), ci.attempts)
			v.Explanation = fmt.Sprintf("intent %s's client reported success (exit %d%s), but the upstream has no effect of it; a client must not say an order exists that was never created.",
				ci.id, b.Exit, resource(b))
			v.Cause = c.phantomCause(h, cv, ci, owner)
		case b.Belief == history.BeliefFailure && executed:
			v = ci.violation(h, c.Name(), ci.attempts)
			v.Explanation = fmt.Sprintf("intent %s's client reported failure (exit %d%s), but the upstream executed it (%s); a client that cannot know the outcome must say unknown, not failed, or its caller will place the order again.",
				ci.id, b.Exit, errorOf(b), effectList(ix.effects, ci.effects))
			v.Cause = c.failureCause(h, ci, b)
		case b.Belief == history.BeliefUnknown:
			unknown++
			if cc.Unknown != "forbidden" {
				continue
			}
			v = ci.violation(h, c.Name(), ci.attempts)
			state := "was not executed"
			if executed {
				state = "was executed"
			}
			v.Explanation = fmt.Sprintf("intent %s's client reported the outcome unknown (exit %d), which the client contract forbids (unknown: forbidden); the order %s.", ci.id, b.Exit, state)
			v.Cause = "the client gives up without a definite answer: retry with the same key until the upstream answers (or look the order up), then report what it says"
		default:
			continue
		}
		r.Violations = append(r.Violations, v)
	}
	r.t.unknowns, r.t.silent, r.t.forbidUnknown = unknown, silent, cc.Unknown == "forbidden"
	return settleTruthful(r, h)
}

// settleTruthful gives the reason from the counts: the end of a check, and
// of a merge of checked parts.
func settleTruthful(r Part, h *history.History) Part {
	var notes []string
	if n := r.t.unknowns; n > 0 && !r.t.forbidUnknown {
		notes = append(notes, fmt.Sprintf("%d of %d intents ended with the outcome unknown (exit 75), which the contract allows", n, r.Checked))
	}
	if n := r.t.silent; n > 0 {
		notes = append(notes, fmt.Sprintf("%d intents have no belief event (their command's end was not recorded) and were not judged", n))
	}
	r.Reason = strings.Join(notes, "; ")
	return finish(r, h, "")
}

// mergeParts settles the whole from its parts' counts: an early unknown
// (a history without effects) stands as it is.
func (truthfulOutcome) mergeParts(r Part, _ []Part, h *history.History) Part {
	if r.t.early != "" {
		return finish(r, h, r.t.early)
	}
	return settleTruthful(r, h)
}

func resource(b *history.Belief) string {
	if b.Resource == "" {
		return ""
	}
	return fmt.Sprintf(", printing %q", b.Resource)
}

func errorOf(b *history.Belief) string {
	if b.Error == "" {
		return ""
	}
	return ": " + b.Error
}

// keyOwners maps each key to the first intent that sent it.
func keyOwners(h *history.History, cv *clientView) map[tenantKey]int32 {
	m := map[tenantKey]int32{}
	for g := range cv.intents {
		for _, i := range cv.intents[g].attempts {
			a := &h.Attempts[i]
			if _, ok := m[tenantKey{a.Tenant, a.Key}]; a.Key != "" && !ok {
				m[tenantKey{a.Tenant, a.Key}] = int32(g)
			}
		}
	}
	return m
}

// sharedWith returns the first intent other than ci that sent one of ci's
// keys, or nil.
func sharedWith(h *history.History, cv *clientView, ci *clientIntent, owner map[tenantKey]int32) *clientIntent {
	for _, i := range ci.attempts {
		a := &h.Attempts[i]
		if g, ok := owner[tenantKey{a.Tenant, a.Key}]; ok && a.Key != "" && cv.intents[g].id != ci.id {
			return &cv.intents[g]
		}
	}
	return nil
}

func (c truthfulOutcome) phantomCause(h *history.History, cv *clientView, ci *clientIntent, owner map[tenantKey]int32) string {
	if o := sharedWith(h, cv, ci, owner); o != nil {
		return fmt.Sprintf("its key was first sent by intent %s (key-per-intent): the upstream answered it with %s's order, which the client reported as its own", o.id, o.id)
	}
	for _, i := range ci.attempts {
		if a := &h.Attempts[i]; a.Outcome == history.OK && a.Status/100 == 2 {
			return "the 2xx it was answered was not backed by an order of its own (another request's answer replayed to it)"
		}
	}
	return "it reports success without a 2xx answer: an error swallowed, or the wrong response read"
}

func (c truthfulOutcome) failureCause(h *history.History, ci *clientIntent, b *history.Belief) string {
	if strings.Contains(b.Error, "timeout") {
		return "the command was killed at its timeout after the upstream had executed the order: a hung retry loop, or a timeout too short for its own retries"
	}
	if len(ci.attempts) > 0 {
		last := &h.Attempts[ci.attempts[len(ci.attempts)-1]]
		if last.Outcome == history.OK && last.Status/100 == 4 {
			return fmt.Sprintf("a later attempt was refused (%d) and reported as the intent's failure although an earlier attempt had executed: a retry that changed its payload or key turns a lost answer into a refusal", last.Status)
		}
	}
	return "a timeout, a lost answer or a 5xx after execution is reported as a failure: when the outcome cannot be known, report unknown (exit 75), or retry with the same key until the upstream answers"
}
