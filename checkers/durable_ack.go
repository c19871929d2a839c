package checkers

import (
	"fmt"
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "durable-ack", New: DurableAck, Suites: map[string]int{SuiteServer: 7}})
}

// DurableAck returns the checker of "durable-ack": every intent acknowledged
// with a success before a crash still has its effect after the restart. It
// needs crash faults in the history; without one there is nothing to check
// and it passes, saying so.
func DurableAck(opts ...Option) Checker { return durableAck{newConfig(opts)} }

type durableAck struct{ cfg config }

var _ Checker = durableAck{}

func (durableAck) Name() string { return "durable-ack" }

func (c durableAck) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c durableAck) check(ix *index) Part {
	h, effects := ix.h, ix.effects
	r := Part{Result: Result{Name: c.Name()}}
	var crashes []int64
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" {
			crashes = append(crashes, f.NS)
		}
	}
	slices.Sort(crashes)
	if len(crashes) == 0 {
		r.t.noCrash = true
		return settleDurableAck(r, h)
	}
	if h.Meta.EffectsUnread {
		r.t.early = "the producer did not read the system's effects (effects_recorded: false), so what survived the crash cannot be known"
		return finish(r, h, r.t.early)
	}
	if !h.EffectsKnown && len(effects) == 0 {
		r.t.early = "the history records no effects, so what survived the crash cannot be known"
		return finish(r, h, r.t.early)
	}
	attr := ix.attribution(&c.cfg.contract)
	for gi := range attr.groups {
		g := &attr.groups[gi]
		// The units acknowledged by a process that then crashed.
		var hit []*unit
		var crashOf []int64
		for _, ui := range attr.unitsOf(g) {
			u := &attr.units[ui]
			if u.acked < 0 {
				continue
			}
			ack := &h.Attempts[attr.ackedOf(u).acked]
			// The attempt was sent before the crash: its success can only
			// have come from the process that then died (a connection does
			// not survive its server), even when the client recorded the
			// answer a moment after the harness recorded the death.
			if crash := firstCrashAfter(crashes, ack.Invoke); crash >= 0 {
				hit, crashOf = append(hit, u), append(crashOf, crash)
			}
		}
		r.Checked += len(hit)
		if g.nUn == 1 {
			if len(hit) == 1 && !attr.executed(hit[0]) {
				r.Violations = append(r.Violations, c.lost(h, attr, hit[0], crashOf[0]))
			}
			continue
		}
		// Several units share the key: the effects that name no intent can
		// go to any of them, so only a shortfall is certain.
		need := 0
		var first *unit
		var crash int64
		for i, u := range hit {
			if u.nEx == 0 {
				if need == 0 {
					first, crash = u, crashOf[i]
				}
				need++
			}
		}
		most := 0
		for _, k := range groupKinds(effects, g.pool()) {
			most = max(most, len(k.idx))
		}
		if need > most {
			v := c.lost(h, attr, first, crash)
			if need > 1 || len(g.pool()) > 0 {
				v.Intent = ""
				v.Explanation = fmt.Sprintf("%s: %d requests acknowledged by the process that crashed at %s have only %d effects after the restart (op %d was the first acknowledged); an acknowledged write must survive a crash.",
					describeGroup(h, attr, g), need, at(crash), most, v.Ops[0])
			}
			r.Violations = append(r.Violations, v)
		}
	}
	return settleDurableAck(r, h)
}

// settleDurableAck gives the verdict and reason from the violations and the
// tally: the end of a check, and of a merge of checked parts.
func settleDurableAck(r Part, h *history.History) Part {
	r = finish(r, h, r.t.early)
	if r.t.noCrash && r.Verdict == Pass {
		r.Reason = "no crash in the history: nothing to check"
	}
	return r
}

// mergeParts settles the whole from its parts, as a check does at its end.
func (durableAck) mergeParts(r Part, _ []Part, h *history.History) Part {
	return settleDurableAck(r, h)
}

func (c durableAck) lost(h *history.History, attr *attribution, u *unit, crash int64) Violation {
	st := attr.ackedOf(u)
	ack := &h.Attempts[st.acked]
	return Violation{
		Invariant: c.Name(), Tenant: ack.Tenant, Method: ack.Method, Path: ack.Path, Key: ack.Key, Intent: st.id(h),
		Ops: []int64{ack.Op},
		Explanation: fmt.Sprintf("%s was acknowledged with %d at %s (op %d) by the process that crashed at %s, and has no effect after the restart; an acknowledged write must survive a crash.",
			describeIntent(h, st), ack.Status, at(ack.Complete), ack.Op, at(crash)),
		Cause: "the service responds before its transaction commits (commit after response)",
	}
}

// firstCrashAfter returns the first of the sorted crash times at or after t,
// or -1.
func firstCrashAfter(crashes []int64, t int64) int64 {
	i, _ := slices.BinarySearch(crashes, t)
	if i == len(crashes) {
		return -1
	}
	return crashes[i]
}
