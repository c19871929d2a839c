package checkers

import (
	"fmt"

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
	r := Result{Name: c.Name()}
	var lastCrash int64 = -1
	crashes := 0
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" {
			crashes++
			lastCrash = max(lastCrash, f.NS)
		}
	}
	if crashes == 0 {
		r = finish(r, h, "")
		if r.Verdict == Pass {
			r.Reason = "no crash in the history: nothing to check"
		}
		return r
	}
	if !h.EffectsKnown && len(effects) == 0 {
		return finish(r, h, "the history records no effects, so what survived the crash cannot be known")
	}
	attr := attribute(h, effects, c.cfg.profile)
	for _, st := range attr.intents {
		if st.acked < 0 {
			continue
		}
		ack := &h.Attempts[st.acked]
		crash := firstCrashAfter(h, ack.Complete)
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
			Explanation: fmt.Sprintf("%s was acknowledged with %d at %s (op %d), before the crash at %s, and has no effect after the restart; an acknowledged write must survive a crash.",
				describeIntent(h, st), ack.Status, at(ack.Complete), ack.Op, at(crash)),
			Cause: "the service responds before its transaction commits (commit after response)",
		})
	}
	return finish(r, h, "")
}

func firstCrashAfter(h *history.History, t int64) int64 {
	best := int64(-1)
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" && f.NS >= t && (best < 0 || f.NS < best) {
			best = f.NS
		}
	}
	return best
}
