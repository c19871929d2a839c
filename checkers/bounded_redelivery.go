package checkers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	// In no suite: it judges consumer scenarios, whose histories carry the
	// broker's acks and delivery counts, and runs when a scenario names it
	// (or its fault, poison-message, makes it the default).
	Register(Registration{Name: "bounded-redelivery", New: BoundedRedelivery})
}

// DefaultMaxDeliveries is bounded-redelivery's bound when the contract
// says none: a message a consumer cannot apply may be tried this many
// times, no more.
const DefaultMaxDeliveries = 10

// BoundedRedelivery returns the checker of "bounded-redelivery": a message
// a consumer cannot apply (a poison message) neither is retried without
// bound nor blocks its queue forever. It reads the broker's delivery count
// of each message (the delivery events written at the run's end, and the
// count each ack carries) and its acks, naks and terminates. Three shapes
// violate it: a message delivered more times than the contract's
// max_deliveries; a message the broker gave up on (its max-deliver count
// reached) that the consumer never terminated or dead-lettered, left
// unsettled where it is; and a message redelivered again and again and
// never settled while the messages published after it were never
// delivered at all (the queue blocked behind it).
func BoundedRedelivery(opts ...Option) Checker { return boundedRedelivery{newConfig(opts)} }

type boundedRedelivery struct{ cfg config }

var _ Checker = boundedRedelivery{}

func (boundedRedelivery) Name() string { return "bounded-redelivery" }

// The pitfalls the three shapes point to.
const (
	causeUnboundedRedelivery = "unbounded redelivery: the consumer naks (or never acks) a message it can never apply, and nothing — its own count of attempts, the broker's max-deliver — stops the redeliveries"
	causeExhaustedUnsettled  = "poison message left unsettled: the consumer never terminates or dead-letters a message it cannot apply, and leaves the broker's max-deliver to give up on it silently"
	causeHeadOfLine          = "head-of-line blocking: the consumer retries a message it cannot apply in place (nak, redeliver, in order), so the messages behind it are never delivered"
)

// noDeliveries is the reason of a history with nothing to judge.
const noDeliveries = "the history records no deliveries (no ack or delivery events): no consumer scenario to judge"

// redelivered is a message delivered more than once and never settled,
// that blocks its queue if a later message was never delivered: what a
// part of a history leaves to the merge.
type redelivered struct {
	tenant, key, intent string
	published           int64 // ns of its first publish
	op                  int64 // its first publish's attempt
	count               int
}

// undelivered is a message published and never delivered.
type undelivered struct {
	intent    string
	published int64
}

// message is what the history says of one message.
type message struct {
	tenant, key, intent string
	published           int64 // -1: no publish recorded
	op                  int64 // the first publish's attempt
	count               int
	settled, term, nak  bool
	kind                string // the delivery event's
}

func (c boundedRedelivery) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c boundedRedelivery) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	bound := cmp.Or(c.cfg.contract.MaxDeliveries, DefaultMaxDeliveries)
	msgs, order := c.messages(h)
	for _, id := range order {
		m := msgs[id]
		if m.count == 0 {
			if m.published >= 0 && !m.settled {
				r.t.undelivered = append(r.t.undelivered, undelivered{intent: cmp.Or(m.intent, m.key), published: m.published})
			}
			continue
		}
		r.Checked++
		v := Violation{Invariant: c.Name(), Tenant: m.tenant, Key: m.key, Intent: m.intent, Ops: ops(m.op)}
		name := cmp.Or(m.intent, m.key)
		switch {
		case m.count > bound:
			v.Explanation = fmt.Sprintf("message %s (key %q) was delivered %d times, more than the contract's max_deliveries of %d: a message the consumer cannot apply must be set aside (terminated, dead-lettered) within the bound, not retried on.",
				name, m.key, m.count, bound)
			v.Cause = causeUnboundedRedelivery
		case m.kind == history.DeliveryExhausted && !m.settled:
			v.Explanation = fmt.Sprintf("message %s (key %q) reached the broker's max-deliver count (%d deliveries) and the broker gave up on it, but the consumer never terminated or dead-lettered it: it stays unsettled, neither applied nor set aside where anyone would look.",
				name, m.key, m.count)
			v.Cause = causeExhaustedUnsettled
		default:
			if m.count > 1 && !m.settled && m.kind == "" && m.published >= 0 {
				r.t.redelivered = append(r.t.redelivered, redelivered{tenant: m.tenant, key: m.key, intent: m.intent, published: m.published, op: m.op, count: m.count})
			}
			continue
		}
		r.Violations = append(r.Violations, v)
	}
	if c.cfg.globals != nil {
		// One part of the history: whether a later message was never
		// delivered is the merge's to say.
		return finish(r, h, "")
	}
	return settleRedelivery(r, [][]redelivered{r.t.redelivered}, [][]undelivered{r.t.undelivered}, h)
}

// messages gathers each message's publish, deliveries and settlement, by
// intent (by tenant and key when the history names none), in the order
// first seen.
func (c boundedRedelivery) messages(h *history.History) (map[string]*message, []string) {
	msgs := map[string]*message{}
	var order []string
	get := func(tenant, key, intent string) *message {
		id := messageID(tenant, key, intent)
		m, ok := msgs[id]
		if !ok {
			m = &message{tenant: tenant, key: key, intent: intent, published: -1}
			msgs[id] = m
			order = append(order, id)
		}
		return m
	}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Method != "PUBLISH" {
			continue
		}
		if m := get(a.Tenant, a.Key, a.Intent); m.published < 0 || a.Invoke < m.published {
			m.published, m.op = a.Invoke, a.Op
		}
	}
	for _, a := range h.Acks {
		m := get(a.Tenant, a.Key, a.Intent)
		m.count = max(m.count, a.Delivered)
		m.settled = m.settled || a.Settles()
		m.term = m.term || a.Term
		m.nak = m.nak || a.Nak
	}
	for _, d := range h.Deliveries {
		m := get(d.Tenant, d.Key, d.Intent)
		m.count = max(m.count, d.Count)
		if d.Kind != "" {
			m.kind = d.Kind
		}
		// A broker that moved the message to its dead-letter queue
		// settled it.
		m.settled = m.settled || d.Kind == history.DeliveryDeadLettered
	}
	return msgs, order
}

// settleRedelivery judges the redelivered, unsettled messages against the
// messages never delivered: one published after it means the queue was
// blocked behind it. The end of a check of the whole history, and of a
// merge of checked parts.
func settleRedelivery(r Part, reds [][]redelivered, unds [][]undelivered, h *history.History) Part {
	var waiting []undelivered
	for _, u := range unds {
		waiting = append(waiting, u...)
	}
	slices.SortFunc(waiting, func(a, b undelivered) int {
		return cmp.Or(cmp.Compare(a.published, b.published), cmp.Compare(a.intent, b.intent))
	})
	for _, rs := range reds {
		for _, m := range rs {
			i, _ := slices.BinarySearchFunc(waiting, m.published+1, func(u undelivered, ns int64) int { return cmp.Compare(u.published, ns) })
			if i == len(waiting) {
				continue
			}
			name := cmp.Or(m.intent, m.key)
			r.Violations = append(r.Violations, Violation{
				Invariant: r.Name, Tenant: m.tenant, Key: m.key, Intent: m.intent, Ops: ops(m.op),
				Explanation: fmt.Sprintf("message %s (key %q) was delivered %d times and never settled, while the %d message(s) published after it were never delivered (the first: %s): the queue is blocked behind it.",
					name, m.key, m.count, len(waiting)-i, waiting[i].intent),
				Cause: causeHeadOfLine,
			})
		}
	}
	if r.Checked == 0 && len(r.Violations) == 0 && r.Reason == "" {
		r.Reason = noDeliveries
	}
	// An interrupted or truncated history is partial: unknown, never a
	// violation.
	return finish(r, h, "")
}

// mergeParts judges the redelivered messages every part left against the
// messages no part saw delivered.
func (boundedRedelivery) mergeParts(r Part, parts []Part, h *history.History) Part {
	reds := make([][]redelivered, len(parts))
	unds := make([][]undelivered, len(parts))
	for i, p := range parts {
		reds[i], unds[i] = p.t.redelivered, p.t.undelivered
	}
	r.t.redelivered, r.t.undelivered = nil, nil
	return settleRedelivery(r, reds, unds, h)
}

// ops names a message's first publish in a violation, none when the
// history records no publish of it.
func ops(op int64) []int64 {
	if op == 0 {
		return nil
	}
	return []int64{op}
}

// FaultPoisonMessage is the fault kind of a message published so that no
// consumer can apply it (poison-message): its fault event names the
// publish it hit by op. Such a message is expected to have no effect, so
// exactly-once does not count its missing effect as lost, nor
// no-lost-message its settlement: it had no effect to lose.
const FaultPoisonMessage = "poison-message"

// poisoned says whether a poison-message fault hit one of the attempts.
func poisoned(h *history.History, idx []int32) bool {
	for _, f := range h.Faults {
		if f.Kind != FaultPoisonMessage || f.Op == 0 {
			continue
		}
		for _, j := range idx {
			if h.Attempts[j].Op == f.Op {
				return true
			}
		}
	}
	return false
}

// poisonedMessages names the messages (by intent, else tenant and key) a
// poison-message fault hit, nil when none did.
func poisonedMessages(h *history.History) map[string]bool {
	var out map[string]bool
	for _, f := range h.Faults {
		if f.Kind != FaultPoisonMessage || f.Op == 0 {
			continue
		}
		for i := range h.Attempts {
			if a := &h.Attempts[i]; a.Op == f.Op {
				if out == nil {
					out = map[string]bool{}
				}
				out[messageID(a.Tenant, a.Key, a.Intent)] = true
			}
		}
	}
	return out
}

// messageID is a message's identity in a consumer history: its intent,
// else its tenant and key.
func messageID(tenant, key, intent string) string {
	if intent != "" {
		return intent
	}
	return tenant + "\x00" + key
}
