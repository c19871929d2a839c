package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	// In no suite: it judges resources with ordered states (a payment
	// provider's events, ordered messages) and runs when a scenario names
	// it, with the order the scenario declares.
	Register(Registration{Name: "forward-only", New: ForwardOnly})
}

// ForwardOnly returns the checker of "forward-only": a resource's state
// (a payment's created → paid → refunded, the declared order of
// [WithStates]) never moves back (seed 002 §八 ③, "业务状态机只允许向前流转").
// It reads two facts of a history. The states the oracle read (effects
// with a state, and the state events of later reads), in the order they
// were written: a state written after a
// later one is a move back. And the transitions the system acknowledged
// (invokes and acks with a state: a provider's event answered 2xx, a
// message acked): once it acknowledged "paid", the resource must end in
// "paid" or after it — a final state behind it was moved back by an older
// event applied later, or the acknowledged one never took effect.
func ForwardOnly(opts ...Option) Checker { return forwardOnly{newConfig(opts)} }

type forwardOnly struct{ cfg config }

var _ Checker = forwardOnly{}

func (forwardOnly) Name() string { return "forward-only" }

// The pitfalls the two shapes point to.
const (
	causeOlderAppliedLater = "an older event applied after a newer one: the handler does not compare the event's version/state before writing"
	causeAckedNotApplied   = "the handler acknowledged the event without applying it: a 2xx must mean its state was written, or a later one already held"
)

// stateObs is one state of a resource the oracle read.
type stateObs struct {
	state string
	rank  int
	at    time.Time // zero: not read
	seq   int       // read order
}

// stateKey is a resource in its tenant.
type stateKey struct{ tenant, resource string }

func (c forwardOnly) Check(h *history.History, effects []history.Effect) Result {
	r := Result{Name: c.Name()}
	order := c.cfg.contract.States
	obs := map[stateKey][]stateObs{}
	var keys []stateKey
	unknownStates := map[string]bool{}
	rank := make(map[string]int, len(order))
	for i, s := range order {
		rank[s] = i
	}
	stated := 0
	for i, e := range effects {
		if e.State == "" {
			continue
		}
		stated++
		k := stateKey{e.Tenant, cmp.Or(e.Resource, e.ID)}
		rk, ok := rank[e.State]
		if !ok {
			unknownStates[e.State] = true
			continue
		}
		if _, seen := obs[k]; !seen {
			keys = append(keys, k)
		}
		obs[k] = append(obs[k], stateObs{state: e.State, rank: rk, at: e.WrittenAt, seq: i})
	}
	for i, sr := range h.States {
		stated++
		k := stateKey{sr.Tenant, sr.Resource}
		rk, ok := rank[sr.State]
		if !ok {
			unknownStates[sr.State] = true
			continue
		}
		if _, seen := obs[k]; !seen {
			keys = append(keys, k)
		}
		obs[k] = append(obs[k], stateObs{state: sr.State, rank: rk, at: sr.WrittenAt, seq: len(effects) + i})
	}
	if stated == 0 && len(h.Transitions) == 0 {
		r.Reason = "the history records no states (no effect, invoke or ack with a state): nothing moves along an order"
		return finish(Part{Result: r}, h, "").Result
	}
	if len(order) == 0 {
		r.Verdict = Unknown
		r.Reason = "the history records states but no declared order of them (the scenario's forward-only states, the contract's states): whether one moved back cannot be said"
		return r
	}
	if stated == 0 {
		r.Verdict = Unknown
		r.Reason = "the oracle read no state of any resource (its effects carry no state), so whether one moved back cannot be known"
		if h.Meta.EffectsUnread {
			r.Reason = "the producer did not read the system's effects (effects_recorded: false), so whether a state moved back cannot be known"
		}
		return r
	}
	started, _ := time.Parse(time.RFC3339Nano, h.Meta.Started)
	since := func(t time.Time) string {
		if t.IsZero() {
			return "at a time not read"
		}
		if started.IsZero() {
			return "at " + t.UTC().Format(time.RFC3339Nano)
		}
		return "at " + at(int64(t.Sub(started)))
	}
	path := strings.Join(order, " → ")
	acked := c.acknowledged(h, rank)
	for _, k := range keys {
		o := obs[k]
		// By when each was written, when every one says; else as read.
		timed := !slices.ContainsFunc(o, func(s stateObs) bool { return s.at.IsZero() })
		if timed {
			slices.SortStableFunc(o, func(a, b stateObs) int { return a.at.Compare(b.at) })
		}
		r.Checked++
		if v, bad := c.movedBack(k, o, since, path); bad {
			r.Violations = append(r.Violations, v)
			continue
		}
		if v, bad := c.behindAcked(h, k, o[len(o)-1], acked[k], started, since, path); bad {
			r.Violations = append(r.Violations, v)
		}
	}
	if len(unknownStates) > 0 {
		names := make([]string, 0, len(unknownStates))
		for s := range unknownStates {
			names = append(names, fmt.Sprintf("%q", s))
		}
		slices.Sort(names)
		r.Reason = fmt.Sprintf("states not in the declared order (%s) were not judged: %s", path, strings.Join(names, ", "))
	}
	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Key, b.Key))
	})
	// An interrupted or truncated history is partial: unknown, never a
	// violation.
	return finish(Part{Result: r}, h, "").Result
}

// movedBack finds the first state written after a later one.
func (c forwardOnly) movedBack(k stateKey, o []stateObs, since func(time.Time) string, path string) (Violation, bool) {
	for i := 1; i < len(o); i++ {
		if o[i].rank < o[i-1].rank {
			return Violation{
				Invariant: c.Name(), Tenant: k.tenant, Key: k.resource,
				Explanation: fmt.Sprintf("%s moved back from %q (written %s) to %q (written %s): its states may only move forward (%s).",
					k.resource, o[i-1].state, since(o[i-1].at), o[i].state, since(o[i].at), path),
				Cause: causeOlderAppliedLater,
			}, true
		}
	}
	return Violation{}, false
}

// ackedState is a transition the system acknowledged.
type ackedState struct {
	intent, state string
	rank          int
	ns            int64
	op            int64
}

// acknowledged lists, per resource, the transitions acknowledged: an
// invoke's by its attempt's 2xx, an ack's by itself.
func (c forwardOnly) acknowledged(h *history.History, rank map[string]int) map[stateKey][]ackedState {
	out := map[stateKey][]ackedState{}
	if len(h.Transitions) == 0 {
		return out
	}
	byOp := make(map[int64]*history.Attempt, len(h.Transitions))
	for _, t := range h.Transitions {
		if t.Op != 0 {
			byOp[t.Op] = nil
		}
	}
	for i := range h.Attempts {
		if _, ok := byOp[h.Attempts[i].Op]; ok {
			byOp[h.Attempts[i].Op] = &h.Attempts[i]
		}
	}
	for _, t := range h.Transitions {
		rk, ok := rank[t.State]
		if !ok || t.Resource == "" {
			continue
		}
		ns := t.NS
		if !t.Acked {
			a := byOp[t.Op]
			if a == nil || a.Outcome != history.OK || a.Status/100 != 2 {
				continue
			}
			ns = a.Complete
		}
		k := stateKey{t.Tenant, t.Resource}
		out[k] = append(out[k], ackedState{intent: t.Intent, state: t.State, rank: rk, ns: ns, op: t.Op})
	}
	return out
}

// behindAcked judges the last state read against the furthest one the
// system acknowledged for the resource.
func (c forwardOnly) behindAcked(h *history.History, k stateKey, last stateObs, acked []ackedState, started time.Time, since func(time.Time) string, path string) (Violation, bool) {
	if len(acked) == 0 {
		return Violation{}, false
	}
	top := acked[0]
	for _, a := range acked[1:] {
		if a.rank > top.rank || a.rank == top.rank && a.ns < top.ns {
			top = a
		}
	}
	if last.rank >= top.rank {
		return Violation{}, false
	}
	v := Violation{Invariant: c.Name(), Tenant: k.tenant, Key: k.resource, Intent: top.intent}
	if top.op != 0 {
		v.Ops = []int64{top.op}
	}
	head := fmt.Sprintf("%s ends in %q (written %s), behind %q, which %s asked for and the system acknowledged at %s",
		k.resource, last.state, since(last.at), top.state, cmp.Or(top.intent, "a message"), at(top.ns))
	// The transition to the state it ended in acknowledged after the
	// furthest one: the older event that moved it back.
	var later *ackedState
	for i := range acked {
		if a := &acked[i]; a.state == last.state && a.ns > top.ns && (later == nil || a.ns < later.ns) {
			later = a
		}
	}
	writtenAfter := !last.at.IsZero() && !started.IsZero() && last.at.After(started.Add(time.Duration(top.ns)))
	switch {
	case later != nil && (last.at.IsZero() || writtenAfter):
		if later.op != 0 {
			v.Ops = append(v.Ops, later.op)
		}
		v.Explanation = fmt.Sprintf("%s; %s, acknowledged later (at %s), moved it back to %q: its states may only move forward (%s).",
			head, cmp.Or(later.intent, "a message"), at(later.ns), last.state, path)
		v.Cause = causeOlderAppliedLater
	case writtenAfter:
		v.Explanation = fmt.Sprintf("%s; a write after it moved it back: its states may only move forward (%s).", head, path)
		v.Cause = causeOlderAppliedLater
	default:
		v.Explanation = fmt.Sprintf("%s, and nothing after it wrote %q: the acknowledged state never took effect (%s).", head, top.state, path)
		v.Cause = causeAckedNotApplied
	}
	return v, true
}
