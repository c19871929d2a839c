package checkers

import (
	"fmt"
	"slices"
	"sort"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	// In no suite: it judges consumer scenarios, whose histories carry the
	// broker's acks, and runs when a scenario names it.
	Register(Registration{Name: "no-lost-message", New: NoLostMessage})
}

// NoLostMessage returns the checker of "no-lost-message": every message a
// consumer acknowledged to its broker (ack events: the broker will never
// deliver it again) has its effect. A message acknowledged with none was
// seen but not applied: the consumer acked, or marked it done, before its
// effect committed, and a crash or a failed write in between lost it for
// good. A nak settles nothing and is not judged. Without acks in the
// history there is nothing to check and it passes, saying so.
func NoLostMessage(opts ...Option) Checker { return noLostMessage{} }

type noLostMessage struct{}

var _ Checker = noLostMessage{}

func (noLostMessage) Name() string { return "no-lost-message" }

// causeAckBeforeEffect is the pitfall the shape points to.
const causeAckBeforeEffect = "ack before effect: the consumer acknowledged the message (or recorded it as handled) before its effect was committed"

func (c noLostMessage) Check(h *history.History, effects []history.Effect) Result {
	r := Result{Name: c.Name()}
	// A nak asks the broker for the message again: it settles nothing, so
	// it promises no effect.
	if !slices.ContainsFunc(h.Acks, history.Ack.Settles) {
		r.Reason = "the history records no broker acks: no consumer scenario to judge"
		// Unless the run was cut short: its acks may be what is missing.
		return finish(Part{Result: r}, h, "").Result
	}
	if h.Meta.EffectsUnread || (!h.EffectsKnown && len(effects) == 0) {
		r.Verdict = Unknown
		r.Reason = "the history records no effects, so whether an acknowledged message had one cannot be known"
		return r
	}
	byIntent := map[string]bool{}
	type tk struct{ tenant, key string }
	byKey := map[tk]bool{}
	for _, e := range effects {
		if e.Intent != "" {
			byIntent[e.Intent] = true
		} else {
			byKey[tk{e.Tenant, e.Key}] = true
		}
	}
	// One verdict per message: its first ack (a redelivered message may
	// be acked more than once, by two consumers).
	seen := map[string]bool{}
	poison := poisonedMessages(h)
	for _, a := range h.Acks {
		if a.Nak {
			continue
		}
		id := messageID(a.Tenant, a.Key, a.Intent)
		if seen[id] {
			continue
		}
		seen[id] = true
		r.Checked++
		if byIntent[a.Intent] || byKey[tk{a.Tenant, a.Key}] {
			continue
		}
		// A poison message has no effect to lose, however it was settled
		// (a term; on Redis, which has none, an XACK after dead-lettering).
		if poison[id] {
			continue
		}
		how := "acknowledged"
		if a.Term {
			how = "terminated"
		}
		r.Violations = append(r.Violations, Violation{
			Invariant: c.Name(), Tenant: a.Tenant, Key: a.Key, Intent: a.Intent,
			Explanation: fmt.Sprintf("message %s (key %q) was %s to the broker at its delivery %d but has no effect: the broker will not deliver it again, so it is lost", a.Intent, a.Key, how, a.Delivered),
			Cause:       causeAckBeforeEffect,
		})
	}
	sort.SliceStable(r.Violations, func(i, j int) bool { return r.Violations[i].Intent < r.Violations[j].Intent })
	// An interrupted or truncated history is partial: unknown, never a
	// violation.
	return finish(Part{Result: r}, h, "").Result
}
