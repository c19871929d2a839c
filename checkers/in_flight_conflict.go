package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// InFlightConflict returns the checker of "in-flight-conflict": a duplicate
// that arrives while the first attempt with its key is still running gets the
// in-flight status (default 409) or waits and gets the first response — never
// a second execution, never a 2xx with a different body. Two attempts are
// concurrent only if their invoke→complete intervals overlap.
func InFlightConflict(opts ...Option) Checker { return inFlightConflict{newConfig(opts)} }

type inFlightConflict struct{ cfg config }

var _ Checker = inFlightConflict{}

func (inFlightConflict) Name() string { return "in-flight-conflict" }

func (c inFlightConflict) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects))
}

func (c inFlightConflict) check(ix *index) Result {
	h, effects := ix.h, ix.effects
	r := Result{Name: c.Name()}
	order, groups := ix.byScope()
	var dups map[tenantKey]string
	for g, s := range order {
		idx := groups[g]
		if len(idx) < 2 {
			continue
		}
		checked := false
	scan:
		for y := 1; y < len(idx); y++ {
			b := &h.Attempts[idx[y]]
			for x := 0; x < y; x++ {
				a := &h.Attempts[idx[x]]
				if a.ReqHash != b.ReqHash || !overlaps(a, b, h.End) {
					continue
				}
				if !checked {
					checked = true
					r.Checked++
				}
				if dups == nil {
					dups = duplicatedKeys(effects, multiKeys(order, groups))
				}
				if v, bad := c.judge(s, a, b, dups); bad {
					r.Violations = append(r.Violations, v)
					break scan
				}
			}
		}
	}
	return finish(r, h, "")
}

// judge checks b, a duplicate that overlapped a.
func (c inFlightConflict) judge(s scope, a, b *history.Attempt, dups map[tenantKey]string) (Violation, bool) {
	v := Violation{Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent, Ops: []int64{a.Op, b.Op}}
	cb := classify(b, c.cfg.profile)
	sameAnswer := a.Outcome == history.OK && b.Outcome == history.OK && a.Status == b.Status && a.RespHash == b.RespHash && a.RespLen == b.RespLen
	switch {
	case cb == succeeded && classify(a, c.cfg.profile) == succeeded && !sameAnswer:
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and was executed again (%d with body %s, where op %d got %s); it must get %d or wait for the first response.",
			describeScope(s), b.Op, a.Op, b.Status, quoteBody(b), a.Op, quoteBody(a), c.cfg.profile.InFlight)
	case cb == succeeded && dups[tenantKey{s.tenant, s.key}] != "":
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and got %d, and the key has %s; a duplicate in flight must get %d or wait for the first response, never execute.",
			describeScope(s), b.Op, a.Op, b.Status, dups[tenantKey{s.tenant, s.key}], c.cfg.profile.InFlight)
	case cb == rejected && b.Outcome == history.OK && definite(a, c.cfg.profile) && !sameAnswer:
		// Only a definite answer of the service itself is the "first
		// response" b should match: a gateway's 504 or a 429 hid it.
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and got %d; it must get %d or wait for the first response (%d).",
			describeScope(s), b.Op, a.Op, b.Status, c.cfg.profile.InFlight, a.Status)
		v.Cause = "the in-flight answer differs from the contract profile"
		return v, true
	default:
		return v, false
	}
	v.Cause = "a record in 'processing' is treated as absent, so the duplicate runs the business write again"
	return v, true
}

// definite reports a success or a rejection: an answer the service gave,
// not a timeout, a 5xx or a "not now".
func definite(a *history.Attempt, p Profile) bool {
	cl := classify(a, p)
	return a.Outcome == history.OK && (cl == succeeded || cl == rejected)
}

// multiKeys returns the (tenant, key) of every scope with two or more
// attempts: the only keys judge asks duplicatedKeys about.
func multiKeys(order []scope, groups [][]int32) map[tenantKey]bool {
	m := make(map[tenantKey]bool)
	for g, s := range order {
		if len(groups[g]) >= 2 {
			m[tenantKey{s.tenant, s.key}] = true
		}
	}
	return m
}

// duplicatedKeys names, per (tenant, key) of keys, the first effect kind
// produced more than once: "2 order effects".
func duplicatedKeys(effects []history.Effect, keys map[tenantKey]bool) map[tenantKey]string {
	type kk struct {
		tk   tenantKey
		kind string
	}
	n := make(map[kk]int)
	out := make(map[tenantKey]string)
	for i := range effects {
		e := &effects[i]
		if !keys[tenantKey{e.Tenant, e.Key}] {
			continue
		}
		k := kk{tenantKey{e.Tenant, e.Key}, e.Kind}
		n[k]++
		if n[k] >= 2 {
			out[k.tk] = fmt.Sprintf("%d %s effects", n[k], e.Kind)
		}
	}
	return out
}
