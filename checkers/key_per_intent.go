package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "key-per-intent", New: KeyPerIntent, Suites: map[string]int{SuiteClient: 3}})
}

// KeyPerIntent returns the checker of "key-per-intent", a client
// invariant: two intents never send the same idempotency key (in one
// tenant). A shared key makes the second intent a replay of the first: its
// order is never created, and it is told it was.
func KeyPerIntent(opts ...Option) Checker { return keyPerIntent{newConfig(opts)} }

type keyPerIntent struct{ cfg config }

var _ Checker = keyPerIntent{}

func (keyPerIntent) Name() string { return "key-per-intent" }

func (c keyPerIntent) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c keyPerIntent) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	if why := noIntents(h); why != "" {
		return early(r, h, why)
	}
	cv := ix.client()
	// owners lists the intents of each key, the first of them first; only
	// a key with two or more is looked at again.
	owners := make(map[tenantKey][]int32, len(h.Attempts))
	var shared []tenantKey
	for g := range cv.intents {
		ci := &cv.intents[g]
		for _, i := range ci.attempts {
			a := &h.Attempts[i]
			if a.Key == "" {
				continue
			}
			k := tenantKey{a.Tenant, a.Key}
			o := owners[k]
			if len(o) > 0 && o[len(o)-1] == int32(g) {
				continue
			}
			if len(o) == 1 {
				shared = append(shared, k)
			}
			owners[k] = append(o, int32(g))
		}
		if len(ci.attempts) > 0 {
			r.Checked++
		}
	}
	for _, k := range shared {
		gs := owners[k]
		first, second := &cv.intents[gs[0]], &cv.intents[gs[1]]
		var ids []string
		var idx []int32
		for _, g := range gs {
			ids = append(ids, cv.intents[g].id)
			for _, i := range cv.intents[g].attempts {
				if h.Attempts[i].Key == k.key {
					idx = append(idx, i)
				}
			}
		}
		v := second.violation(h, c.Name(), idx)
		v.Key = k.key
		v.Explanation = fmt.Sprintf("intents %s all sent idempotency key %q, so the service treats the later ones as retries of %s: their orders are never created and they are answered with %s's; each intent must have a key of its own.",
			joinWords(ids), k.key, first.id, first.id)
		if samePayload(h, first, second) {
			v.Cause = "the key is derived from the payload (a hash of the body): two real orders with the same contents collapse into one; mint a random key per intent"
		} else {
			v.Cause = "the key comes from a counter or clock that repeats (restarted with the process, or too coarse): mint a random key per intent"
		}
		r.Violations = append(r.Violations, v)
	}
	return finish(r, h, "")
}

// samePayload says whether two intents were given, or first sent, the same
// payload.
func samePayload(h *history.History, a, b *clientIntent) bool {
	if a.invocation >= 0 && b.invocation >= 0 {
		return h.Invocations[a.invocation].BodyHash == h.Invocations[b.invocation].BodyHash
	}
	if len(a.attempts) == 0 || len(b.attempts) == 0 {
		return false
	}
	return h.Attempts[a.attempts[0]].ReqHash == h.Attempts[b.attempts[0]].ReqHash
}
