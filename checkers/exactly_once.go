package checkers

import (
	"fmt"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// ExactlyOnce returns the checker of "exactly-once": an intent with an
// acknowledged success has exactly one effect of each kind; one with only
// indeterminate attempts has zero or one; one with only definite rejections
// has none. A duplicate (two or more) and a lost effect (acknowledged, none)
// are both violations.
func ExactlyOnce(opts ...Option) Checker { return exactlyOnce{newConfig(opts)} }

type exactlyOnce struct{ cfg config }

var _ Checker = exactlyOnce{}

func (exactlyOnce) Name() string { return "exactly-once" }

func (c exactlyOnce) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects))
}

func (c exactlyOnce) check(ix *index) Result {
	h, effects := ix.h, ix.effects
	r := Result{Name: c.Name()}
	if !h.EffectsKnown && len(effects) == 0 {
		return finish(r, h, "the history records no effects (no effect events, and the meta event does not set effects_recorded), so nothing can be said about how many times anything executed")
	}
	at := ix.attribution(c.cfg.profile())
	var bodies map[bodyScope][]*intentState
	for _, st := range at.intents {
		r.Checked++
		first := &h.Attempts[st.attempts[0]]
		var kinds, dup []kindEffects
		if len(st.effects) >= 2 { // fewer cannot be a duplicate
			kinds = groupKinds(effects, st.effects)
			for _, k := range kinds {
				if len(k.idx) >= 2 {
					dup = append(dup, k)
				}
			}
		}
		switch {
		case len(dup) > 0:
			r.Violations = append(r.Violations, c.duplicate(h, effects, st, kinds, dup))
		case st.acked >= 0 && len(st.effects) == 0:
			if bodies == nil {
				bodies = indexBodies(h, at)
			}
			r.Violations = append(r.Violations, c.lost(h, st, bodies))
		case st.acked < 0 && !st.anyIndet && len(st.effects) > 0:
			r.Violations = append(r.Violations, Violation{
				Invariant: c.Name(), Tenant: first.Tenant, Method: first.Method, Path: first.Path, Key: first.Key, Intent: st.id,
				Ops: opsOf(h, st.attempts),
				Explanation: fmt.Sprintf("%s was never acknowledged (answers: %s) yet produced %s; a request that was only ever rejected must have no effect.",
					describeIntent(h, st), answers(h, st.attempts), effectList(effects, st.effects)),
			})
		}
	}
	if at.orphans > 0 {
		r.Reason = fmt.Sprintf("%d %s matched no attempt in the history and were not judged", at.orphans, plural(at.orphans, "effect", "effects"))
	}
	return finish(r, h, "")
}

type kindEffects struct {
	kind string
	idx  []int32
}

func groupKinds(effects []history.Effect, idx []int32) []kindEffects {
	var out []kindEffects
	for _, i := range idx {
		k := effects[i].Kind
		found := false
		for j := range out {
			if out[j].kind == k {
				out[j].idx = append(out[j].idx, i)
				found = true
				break
			}
		}
		if !found {
			out = append(out, kindEffects{kind: k, idx: []int32{i}})
		}
	}
	return out
}

func (c exactlyOnce) duplicate(h *history.History, effects []history.Effect, st *intentState, kinds, dup []kindEffects) Violation {
	first := &h.Attempts[st.attempts[0]]
	// Name every duplicated kind: "2 order effects (…) and 2 ledger effects (…)".
	parts := make([]string, len(dup))
	for i, d := range dup {
		parts[i] = fmt.Sprintf("%d %s effects (%s)", len(d.idx), d.kind, effectList(effects, d.idx))
	}
	what := strings.Join(parts, " and ")
	if len(parts) > 2 {
		what = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	v := Violation{
		Invariant: c.Name(), Tenant: first.Tenant, Method: first.Method, Path: first.Path, Key: first.Key, Intent: st.id,
		Ops: opsOf(h, st.attempts),
		Explanation: fmt.Sprintf("%s produced %s; exactly one of each was expected. The intent sent %s.",
			describeIntent(h, st), what, opList(opsOf(h, st.attempts))),
	}
	v.Cause = c.duplicateCause(h, effects, st, kinds, dup)
	return v
}

func (c exactlyOnce) duplicateCause(h *history.History, effects []history.Effect, st *intentState, kinds, dup []kindEffects) string {
	// Keys of the intent's own endpoint: a callback or a follow-up request
	// to another endpoint is not a retry with a new key.
	first := &h.Attempts[st.attempts[0]]
	keys := map[string]bool{}
	for _, i := range st.attempts {
		if a := &h.Attempts[i]; a.Key != "" && a.Method == first.Method && a.Path == first.Path {
			keys[a.Key] = true
		}
	}
	if len(dup) < len(kinds) {
		return fmt.Sprintf("only the %s effect is duplicated while the request itself executed once: a redelivered message or callback was applied again — the consumer or callback handler does not deduplicate (by event id or provider transaction)", dup[0].kind)
	}
	if len(keys) >= 2 {
		return "the key was regenerated for each retry, so the service saw every attempt as a new intent; generate the key once, before the retry loop"
	}
	if first.Key == "" {
		return "the requests carried no idempotency key, so nothing could tell the duplicates apart"
	}
	for x := 0; x < len(st.attempts); x++ {
		for y := x + 1; y < len(st.attempts); y++ {
			if overlaps(&h.Attempts[st.attempts[x]], &h.Attempts[st.attempts[y]], h.End) {
				return "overlapping duplicates both executed: the claim is not atomic (check-then-insert, execute-then-record, or a 'processing' record treated as absent) — claim with a unique-index insert before the business write"
			}
		}
	}
	if faulted(h, "retention-expiry") || maxGap(h, st.attempts) >= int64(c.cfg.contract.RetentionGap) {
		return "a retry after a long gap executed again: the idempotency record was purged before the client's retry window ended (retention shorter than the retry window)"
	}
	if faulted(h, "replica-lag") {
		return "a sequential retry did not see the first execution: the idempotency lookup read a lagging replica instead of the primary"
	}
	return "a sequential retry did not see the first execution: the service ignores the key, or the record was not written (or not committed) before the response, or was lost"
}

// bodyScope groups intents that sent byte-identical requests to one endpoint.
type bodyScope struct {
	tenant, method, path string
	body                 uint64
}

func indexBodies(h *history.History, at *attribution) map[bodyScope][]*intentState {
	m := make(map[bodyScope][]*intentState)
	for _, st := range at.intents {
		a := &h.Attempts[st.attempts[0]]
		k := bodyScope{a.Tenant, a.Method, a.Path, a.ReqHash}
		m[k] = append(m[k], st)
	}
	return m
}

func (c exactlyOnce) lost(h *history.History, st *intentState, bodies map[bodyScope][]*intentState) Violation {
	ack := &h.Attempts[st.acked]
	v := Violation{
		Invariant: c.Name(), Tenant: ack.Tenant, Method: ack.Method, Path: ack.Path, Key: ack.Key, Intent: st.id,
		Ops: opsOf(h, st.attempts),
		Explanation: fmt.Sprintf("%s was acknowledged with %d (op %d) but produced no effect; exactly one was expected.",
			describeIntent(h, st), ack.Status, ack.Op),
	}
	for _, other := range bodies[bodyScope{ack.Tenant, ack.Method, ack.Path, ack.ReqHash}] {
		if other != st && len(other.effects) > 0 {
			v.Cause = fmt.Sprintf("intent %s sent a byte-identical body and did execute: the service deduplicates by request body instead of by key, and swallowed a second legitimate intent", other.id)
			return v
		}
	}
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" && f.NS > ack.Complete {
			v.Cause = fmt.Sprintf("the service answered before it committed, and the crash at %s lost the write (commit after response)", at(f.NS))
			return v
		}
	}
	v.Cause = "the success response was not backed by a committed write, or was another request's response replayed to this one"
	return v
}

func describeIntent(h *history.History, st *intentState) string {
	a := &h.Attempts[st.attempts[0]]
	s := describeScope(scopeOf(a))
	if a.Key == "" {
		s = strings.Replace(s, "key ", "no key", 1)
	}
	if strings.HasPrefix(st.id, "key:") {
		return "the intent of " + s
	}
	return fmt.Sprintf("intent %s (%s)", st.id, s)
}

func effectList(effects []history.Effect, idx []int32) string {
	parts := make([]string, 0, len(idx))
	for i, j := range idx {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("… %d in all", len(idx)))
			break
		}
		parts = append(parts, effects[j].ID)
	}
	return strings.Join(parts, ", ")
}

func answers(h *history.History, idx []int32) string {
	parts := make([]string, len(idx))
	for i, j := range idx {
		parts[i] = statusOf(&h.Attempts[j])
	}
	return strings.Join(parts, ", ")
}

func faulted(h *history.History, kind string) bool {
	for _, f := range h.Faults {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// maxGap is the longest pause between one attempt's end and the next's start.
func maxGap(h *history.History, idx []int32) int64 {
	var gap int64
	for i := 1; i < len(idx); i++ {
		prev, cur := &h.Attempts[idx[i-1]], &h.Attempts[idx[i]]
		if g := cur.Invoke - prev.End(h.End); g > gap {
			gap = g
		}
	}
	return gap
}
