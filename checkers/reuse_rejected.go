package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// ReuseRejected returns the checker of "reuse-rejected": a key reused with a
// different payload is rejected with the profile's status (default 422), has
// no effect, and never gets the other payload's response.
func ReuseRejected(opts ...Option) Checker { return reuseRejected{newConfig(opts)} }

type reuseRejected struct{ cfg config }

var _ Checker = reuseRejected{}

func (reuseRejected) Name() string { return "reuse-rejected" }

func (c reuseRejected) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects))
}

func (c reuseRejected) check(ix *index) Result {
	h := ix.h
	r := Result{Name: c.Name()}
	order, groups := ix.byScope()
	for g, s := range order {
		idx := groups[g]
		if !severalPayloads(h, idx) {
			if v, bad := c.phantomReuse(h, s, idx); bad {
				r.Violations = append(r.Violations, v)
			}
			continue
		}
		r.Checked++
		// The owner is the payload the service acknowledged first; every
		// other payload must be rejected.
		owner := int32(-1)
		for _, i := range idx {
			a := &h.Attempts[i]
			if classify(a, c.cfg.profile) == succeeded && (owner < 0 || a.Complete < h.Attempts[owner].Complete) {
				owner = i
			}
		}
		for _, i := range idx {
			a := &h.Attempts[i]
			if owner >= 0 && a.ReqHash == h.Attempts[owner].ReqHash {
				continue
			}
			if v, bad := c.judge(h, s, idx, owner, a); bad {
				r.Violations = append(r.Violations, v)
				break // one violation per key is enough to explain it
			}
		}
	}
	return finish(r, h, "")
}

func severalPayloads(h *history.History, idx []int32) bool {
	first := h.Attempts[idx[0]].ReqHash
	for _, i := range idx[1:] {
		if h.Attempts[i].ReqHash != first {
			return true
		}
	}
	return false
}

// judge checks one attempt whose payload is not the owner's.
func (c reuseRejected) judge(h *history.History, s scope, idx []int32, owner int32, a *history.Attempt) (Violation, bool) {
	v := Violation{Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: a.Intent}
	switch classify(a, c.cfg.profile) {
	case succeeded:
		o := &h.Attempts[owner]
		v.Ops = []int64{o.Op, a.Op}
		if a.RespHash == o.RespHash && a.RespLen == o.RespLen {
			v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and got the other payload's response (the same %d and body as op %d); it must be rejected with %d.",
				describeScope(s), a.Op, a.Status, o.Op, c.cfg.profile.Reuse)
			v.Cause = "the service does not store a request fingerprint with the key, so it cannot tell a reused key from a retry"
		} else {
			v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and executed it (%d, body %s) after op %d had succeeded with the first payload; it must be rejected with %d.",
				describeScope(s), a.Op, a.Status, quoteBody(a), o.Op, c.cfg.profile.Reuse)
			v.Cause = "the key's record does not bind the request fingerprint, or the claim is not checked before executing"
		}
		return v, true
	case rejected, pending:
		if a.Outcome != history.OK || a.Status == c.cfg.profile.Reuse {
			return v, false
		}
		if a.Status == 429 || a.Status == 425 {
			return v, false // throttled before anyone looked at the key: says nothing about reuse
		}
		if !otherPayloadBefore(h, idx, a) {
			return v, false // no other payload had claimed the key yet: not a reuse answer
		}
		if a.Status == c.cfg.profile.InFlight && overlapsAny(h, idx, a) {
			return v, false // the first payload was still in flight: 409 is fair
		}
		v.Ops = []int64{a.Op}
		v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and rejected with %d; the %s contract says %d.",
			describeScope(s), a.Op, a.Status, c.cfg.profile.Name, c.cfg.profile.Reuse)
		v.Cause = "the status contract differs from the profile: set the scenario's contract to the service's documented statuses if this is intended"
		return v, true
	}
	return v, false
}

// otherPayloadBefore reports whether an attempt with another payload started
// before a ended. Only then can a's answer be a reuse rejection: a 400 for an
// invalid first payload that the client then fixed under the same key is
// that payload's own answer. idx is sorted by invoke time.
func otherPayloadBefore(h *history.History, idx []int32, a *history.Attempt) bool {
	end := a.End(h.End)
	for _, i := range idx {
		b := &h.Attempts[i]
		if b.Invoke >= end {
			return false
		}
		if b.ReqHash != a.ReqHash {
			return true
		}
	}
	return false
}

func overlapsAny(h *history.History, idx []int32, a *history.Attempt) bool {
	for _, i := range idx {
		b := &h.Attempts[i]
		if b.Op != a.Op && b.ReqHash != a.ReqHash && overlaps(a, b, h.End) {
			return true
		}
	}
	return false
}

// phantomReuse catches a key rejected as reused although its scope only ever
// saw one payload: the service matched it against another scope's record
// (another tenant's, or another endpoint's).
func (c reuseRejected) phantomReuse(h *history.History, s scope, idx []int32) (Violation, bool) {
	if c.cfg.profile.Reuse == 0 {
		return Violation{}, false
	}
	for _, i := range idx {
		a := &h.Attempts[i]
		if a.Outcome == history.OK && a.Status == c.cfg.profile.Reuse {
			return Violation{
				Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: a.Intent, Ops: []int64{a.Op},
				Explanation: fmt.Sprintf("%s was rejected with %d as a reused key (op %d), but this tenant only ever sent one payload with it; a key is only reused within its own scope.",
					describeScope(s), a.Status, a.Op),
				Cause: "the key's scope is wider than (tenant, endpoint, key): another tenant's record with the same key was found",
			}, true
		}
	}
	return Violation{}, false
}
