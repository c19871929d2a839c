package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// checkClient judges exactly-once over a client run's history, per intent
// from the effects the harness attributed to it (the upstream response
// naming the resource passed through the intent's own listener): two or
// more effects are a duplicate; none, for an intent its client reported
// succeeded or the upstream acknowledged with a 2xx, a lost order. An
// effect attributed to no intent is counted against none, and noted.
func (c exactlyOnce) checkClient(ix *index, r Part) Part {
	h, effects := ix.h, ix.effects
	unread := h.Meta.EffectsUnread
	cv := ix.client()
	var owner map[tenantKey]int32
	for g := range cv.intents {
		ci := &cv.intents[g]
		if len(ci.attempts) == 0 && ci.belief < 0 {
			continue
		}
		r.Checked++
		b := ci.beliefOf(h)
		acked := b != nil && b.Belief == history.BeliefSuccess
		for _, i := range ci.attempts {
			if a := &h.Attempts[i]; a.Outcome == history.OK && a.Status/100 == 2 && !a.Proxied {
				acked = true
			}
		}
		// An order may be more than one effect (an order and its ledger
		// entry): a duplicate is two of one kind.
		var dup []string
		if len(ci.effects) >= 2 {
			for _, k := range groupKinds(effects, ci.effects) {
				if len(k.idx) >= 2 {
					dup = append(dup, fmt.Sprintf("%s (%s)", countOf(len(k.idx), k.kind), effectList(effects, k.idx)))
				}
			}
		}
		switch n := len(ci.effects); {
		case len(dup) > 0:
			v := ci.violation(h, c.Name(), ci.attempts)
			v.Explanation = fmt.Sprintf("intent %s produced %s; exactly one of each was expected. Its client sent %s.",
				ci.id, joinWords(dup), opList(v.Ops))
			switch keys := keysOf(h, ci.attempts); {
			case len(keys) >= 2:
				v.Cause = "the key was regenerated for each retry, so the upstream saw every attempt as a new order; generate the key once, before the retry loop"
			case len(keys) == 0:
				v.Cause = "a blind re-send of a keyless POST after a lost answer or a 502/504: each re-send after execution is another order; send an idempotency key with every write"
			default:
				v.Cause = "every attempt carried the same key, yet the upstream executed it more than once: the upstream's idempotency failed, not the client's"
			}
			r.Violations = append(r.Violations, v)
		case n == 0 && acked && !unread:
			if owner == nil {
				owner = keyOwners(h, cv)
			}
			v := ci.violation(h, c.Name(), ci.attempts)
			v.Explanation = fmt.Sprintf("intent %s was reported created (or acknowledged with a 2xx) but produced no effect of its own; exactly one was expected.", ci.id)
			if o := sharedWith(h, cv, ci, owner); o != nil {
				v.Cause = fmt.Sprintf("its key was first sent by intent %s, so the upstream answered it with %s's order as a replay and never created its own: a key derived from the body, or shared between intents", o.id, o.id)
			} else {
				v.Cause = "the success was not backed by an order of its own: another request's answer replayed to it, or a success reported without one"
			}
			r.Violations = append(r.Violations, v)
		}
	}
	r.t.client, r.t.unattributed, r.t.unread = true, len(cv.unattributed), unread
	return settleClientExactlyOnce(r, h)
}

// settleClientExactlyOnce gives the verdict and reason of a client run's
// exactly-once from the violations and the tally: the end of a check, and
// of a merge of checked parts.
func settleClientExactlyOnce(r Part, h *history.History) Part {
	r.Reason = ""
	if n := r.t.unattributed; n > 0 {
		r.Reason = fmt.Sprintf("%d %s attributed to no intent (no intent's listener passed the response naming %s): counted against none", n, plural(n, "effect was", "effects were"), plural(n, "it", "them"))
	}
	unknown := ""
	if r.t.unread {
		unknown = "the producer did not read all of the upstream's effects (effects_recorded: false): duplicates were judged, lost orders cannot be"
	}
	return finish(r, h, unknown)
}
