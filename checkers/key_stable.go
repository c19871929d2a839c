package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "key-stable", New: KeyStable, Suites: map[string]int{SuiteClient: 1}})
}

// KeyStable returns the checker of "key-stable", a client invariant: every
// attempt of one intent that carries an idempotency key carries the same
// one. A retry under a new key is a new order to the service.
func KeyStable(opts ...Option) Checker { return keyStable{newConfig(opts)} }

type keyStable struct{ cfg config }

var _ Checker = keyStable{}

func (keyStable) Name() string { return "key-stable" }

func (c keyStable) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c keyStable) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	for _, ci := range ix.client().intents {
		if len(ci.attempts) == 0 {
			continue
		}
		r.Checked++
		keys := keysOf(h, ci.attempts)
		if len(keys) < 2 {
			continue
		}
		// The first attempt that changed the key, and the one before it.
		var changed []int32
		first := ""
		for _, i := range ci.attempts {
			a := &h.Attempts[i]
			if a.Key == "" {
				continue
			}
			if first == "" {
				first = a.Key
			}
			if a.Key != first {
				changed = append(changed, i)
			}
		}
		v := ci.violation(h, c.Name(), ci.attempts)
		v.Key = first
		a := &h.Attempts[changed[0]]
		v.Explanation = fmt.Sprintf("intent %s sent %d attempts under %d different idempotency keys (%s): attempt %d (op %d) came with key %q instead of %q, so the service took it for a new order; every attempt of one intent must carry the same key.",
			ci.id, len(ci.attempts), len(keys), quoteList(keys, 4), a.Number, a.Op, a.Key, first)
		v.Cause = "the key is generated inside the retry loop (or per request object), so every retry mints a new one: generate it once per intent, before the first attempt, and reuse it on every retry"
		r.Violations = append(r.Violations, v)
	}
	return finish(r, h, "")
}

// noIntents is the reason a client check gives on a history that does not
// record which intent each attempt belongs to.
func noIntents(h *history.History) string {
	if len(h.Attempts) > 0 && !h.IntentsKnown {
		return "the history records no intents (no \"intent\" on its invoke events), so the attempts of one intent cannot be told apart from another's"
	}
	return ""
}
