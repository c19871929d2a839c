package checkers

import (
	"fmt"
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

// DurableAck returns the checker of "durable-ack": every intent acknowledged
// with a success before a crash still has its effect after the restart. It
// needs crash faults in the history; without one there is nothing to check
// and it passes, saying so.
func DurableAck(opts ...Option) Checker { return durableAck{newConfig(opts)} }

type durableAck struct{ cfg config }

var _ Checker = durableAck{}

func (durableAck) Name() string { return "durable-ack" }

func (c durableAck) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects))
}

func (c durableAck) check(ix *index) Result {
	h, effects := ix.h, ix.effects
	r := Result{Name: c.Name()}
	var crashes []int64
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" {
			crashes = append(crashes, f.NS)
		}
	}
	slices.Sort(crashes)
	if len(crashes) == 0 {
		r = finish(r, h, "")
		if r.Verdict == Pass {
			r.Reason = "no crash in the history: nothing to check"
		}
		return r
	}
	if !h.EffectsKnown && len(effects) == 0 {
		return finish(r, h, "the history records no effects, so what survived the crash cannot be known")
	}
	attr := ix.attribution(c.cfg.profile())
	for _, st := range attr.intents {
		if st.acked < 0 {
			continue
		}
		ack := &h.Attempts[st.acked]
		// The attempt was sent before the crash: its success can only have
		// come from the process that then died (a connection does not
		// survive its server), even when the client recorded the answer a
		// moment after the harness recorded the death.
		crash := firstCrashAfter(crashes, ack.Invoke)
		if crash < 0 {
			continue
		}
		r.Checked++
		if len(st.effects) > 0 {
			continue
		}
		r.Violations = append(r.Violations, Violation{
			Invariant: c.Name(), Tenant: ack.Tenant, Method: ack.Method, Path: ack.Path, Key: ack.Key, Intent: st.id,
			Ops: []int64{ack.Op},
			Explanation: fmt.Sprintf("%s was acknowledged with %d at %s (op %d) by the process that crashed at %s, and has no effect after the restart; an acknowledged write must survive a crash.",
				describeIntent(h, st), ack.Status, at(ack.Complete), ack.Op, at(crash)),
			Cause: "the service responds before its transaction commits (commit after response)",
		})
	}
	return finish(r, h, "")
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
