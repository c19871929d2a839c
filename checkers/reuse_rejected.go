package checkers

import (
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "reuse-rejected", New: ReuseRejected, Suites: map[string]int{SuiteServer: 3}})
}

// ReuseRejected returns the checker of "reuse-rejected": a key reused with a
// different payload is rejected with the profile's status (default 422), has
// no effect, and never gets the other payload's response.
func ReuseRejected(opts ...Option) Checker { return reuseRejected{newConfig(opts)} }

type reuseRejected struct{ cfg config }

var _ Checker = reuseRejected{}

func (reuseRejected) Name() string { return "reuse-rejected" }

func (c reuseRejected) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c reuseRejected) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	order, groups := ix.byScope()
	ct := &c.cfg.contract
	var byKey map[string][]int // scopes of each key, built for a phantom reuse
	looseKnown, looseSeen := false, false
	for g := range order.len() {
		s := order.at(g)
		idx := groups.at(g)
		// A rejection as "reused" before this scope ever sent another
		// payload: the key was matched against another scope's record.
		if hasStatus(h, idx, c.cfg.profile().Reuse) {
			if byKey == nil {
				byKey = scopesByKey(order)
			}
			if v, bad := c.phantomReuse(h, s, idx, order, groups, byKey[s.key], &r.Checked); bad {
				r.Violations = append(r.Violations, v)
				continue
			}
		}
		if !severalPayloads(h, idx, ct) {
			continue
		}
		r.Checked++
		if !looseKnown {
			looseKnown, looseSeen = true, reuseRejectedSomewhere(h, order, groups, c.cfg.profile(), ct)
		}
		// The owner is the payload the service acknowledged first; every
		// other payload must be rejected.
		owner := int32(-1)
		for _, i := range idx {
			a := &h.Attempts[i]
			if classify(a, c.cfg.profile()) == succeeded && (owner < 0 || a.Complete < h.Attempts[owner].Complete) {
				owner = i
			}
		}
		if owner < 0 {
			owner = firstAlone(h, idx, ct)
		}
		if owner < 0 {
			owner = onlyUnrejected(h, idx, ct, c.cfg.profile().Reuse)
		}
		for _, i := range idx {
			a := &h.Attempts[i]
			if owner >= 0 && ct.distinct(a) == ct.distinct(&h.Attempts[owner]) {
				continue
			}
			if v, bad := c.judge(h, s, idx, owner, a, looseSeen); bad {
				r.Violations = append(r.Violations, v)
				break // one violation per key is enough to explain it
			}
		}
	}
	if c.cfg.globals != nil {
		// A part of a history tells the merge whether it saw a loose
		// comparison: the cause of the other parts' violations depends on it.
		r.t.looseSeen = reuseRejectedSomewhere(h, order, groups, c.cfg.profile(), ct)
	}
	return finish(r, h, "")
}

// firstAlone returns the key's first attempt that may have reached the
// service when no other payload was sent before it ended, or -1. No answer
// of the key succeeded (a lost 201, a record stuck in progress), yet that
// payload claimed the key: its own retries' 409s or 5xx are its answers,
// not a reuse rejected with the wrong status. idx is sorted by invoke time.
func firstAlone(h *history.History, idx []int32, ct *Contract) int32 {
	for _, i := range idx {
		a := &h.Attempts[i]
		if a.Outcome == history.Fail {
			continue // never sent: it claimed nothing
		}
		if otherPayloadBefore(h, idx, a, ct) {
			return -1
		}
		return i
	}
	return -1
}

// onlyUnrejected returns the first sent attempt of the key's one payload
// the service never rejected as reused, when it rejected every other one
// so, or -1: payloads sent while the first was still open (a collision, a
// copy) are told apart by the service's own answers.
func onlyUnrejected(h *history.History, idx []int32, ct *Contract, reuse int) int32 {
	rejected := make(map[uint64]bool)
	for _, i := range idx {
		a := &h.Attempts[i]
		rejected[ct.distinct(a)] = rejected[ct.distinct(a)] || (a.Outcome == history.OK && a.Status == reuse)
	}
	owner := int32(-1)
	for _, i := range idx {
		a := &h.Attempts[i]
		if rejected[ct.distinct(a)] || a.Outcome == history.Fail {
			continue
		}
		if owner >= 0 && ct.distinct(&h.Attempts[owner]) != ct.distinct(a) {
			return -1 // two payloads never rejected: either may own the key
		}
		if owner < 0 {
			owner = i
		}
	}
	return owner
}

func severalPayloads(h *history.History, idx []int32, ct *Contract) bool {
	first := ct.distinct(&h.Attempts[idx[0]])
	for _, i := range idx[1:] {
		if ct.distinct(&h.Attempts[i]) != first {
			return true
		}
	}
	return false
}

// unboundCause is the cause of a reused key that got the other payload's
// response, unless the whole history shows a loose comparison
// (looseCause): a part of a history checked alone cannot know, so its merge
// settles it ([reuseRejected.mergeParts]).
const unboundCause = "the service does not store a request fingerprint with the key (or compares too little of it), so it cannot tell a reused key from a retry"

// mergeParts gives the violations of the parts the cause the whole history
// shows: a loose comparison seen in any part is the cause of every
// violation a part without one blamed on an unbound fingerprint.
func (reuseRejected) mergeParts(r Part, _ []Part, h *history.History) Part {
	if r.t.looseSeen {
		for i := range r.Violations {
			if v := &r.Violations[i]; v.Cause == unboundCause {
				v.Cause = looseCause
			}
		}
	}
	return finish(r, h, "")
}

// judge checks one attempt whose payload is not the owner's.
const looseCause = "the payload comparison is too loose: it rejects other payloads, but takes values of another type ('qty':1, 'qty':\"1\", 'qty':true) or fields it does not compare for the same payload"

func (c reuseRejected) judge(h *history.History, s scope, idx []int32, owner int32, a *history.Attempt, looseSeen bool) (Violation, bool) {
	v := Violation{Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: a.Intent}
	ct := &c.cfg.contract
	switch classify(a, c.cfg.profile()) {
	case succeeded:
		o := &h.Attempts[owner]
		v.Ops = []int64{o.Op, a.Op}
		if a.RespHash == o.RespHash && a.RespLen == o.RespLen {
			v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and got the other payload's response (the same %d and body as op %d); it must be rejected with %d.",
				describeScope(s), a.Op, a.Status, o.Op, c.cfg.profile().Reuse)
			switch {
			case ct.Fingerprint == FingerprintStrict && a.ReqCanon == o.ReqCanon:
				v.Cause = "the service fingerprints the parsed JSON (key order and spacing ignored), while the contract says strict: set fingerprint: canonical if that is intended"
			case looseSeen:
				v.Cause = looseCause
			default:
				v.Cause = unboundCause
			}
		} else {
			v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and executed it (%d, body %s) after op %d had succeeded with the first payload; it must be rejected with %d.",
				describeScope(s), a.Op, a.Status, quoteBody(a), o.Op, c.cfg.profile().Reuse)
			v.Cause = "the key's record does not bind the request fingerprint, or the claim is not checked before executing"
		}
		return v, true
	case rejected, pending:
		if a.Outcome != history.OK || a.Status == c.cfg.profile().Reuse {
			return v, false
		}
		if a.Status == 429 || a.Status == 425 {
			return v, false // throttled before anyone looked at the key: says nothing about reuse
		}
		if a.Status == 400 {
			// Bad Request: many services validate the body before they
			// look the key up, and the other payload may be invalid on its
			// own ("qty":"5"). It is a rejection and executed nothing.
			return v, false
		}
		if !otherPayloadBefore(h, idx, a, ct) {
			return v, false // no other payload had claimed the key yet: not a reuse answer
		}
		if a.Status == c.cfg.profile().InFlight && overlapsAny(h, idx, a) {
			return v, false // the key was held by an attempt in flight: 409 is fair
		}
		v.Ops = []int64{a.Op}
		v.Explanation = fmt.Sprintf("%s was reused with a different payload (op %d) and rejected with %d; the %s contract says %d.",
			describeScope(s), a.Op, a.Status, c.cfg.profile().Name, c.cfg.profile().Reuse)
		v.Cause = "the status contract differs from the profile: set the scenario's contract to the service's documented statuses if this is intended"
		return v, true
	}
	return v, false
}

// otherPayloadBefore reports whether an attempt with another payload started
// before a ended. Only then can a's answer be a reuse rejection: a 400 for an
// invalid first payload that the client then fixed under the same key is
// that payload's own answer. idx is sorted by invoke time.
func otherPayloadBefore(h *history.History, idx []int32, a *history.Attempt, ct *Contract) bool {
	end := a.End(h.End)
	for _, i := range idx {
		b := &h.Attempts[i]
		if b.Invoke >= end {
			return false
		}
		if ct.distinct(b) != ct.distinct(a) {
			return true
		}
	}
	return false
}

// overlapsAny reports whether another attempt on the key was in flight
// while a ran: whatever its payload — a copy of a's own payload that holds
// the key makes the in-flight status the service's fair answer, since a
// service may look at the key's state before it compares fingerprints.
func overlapsAny(h *history.History, idx []int32, a *history.Attempt) bool {
	for _, i := range idx {
		b := &h.Attempts[i]
		if b.Op != a.Op && overlaps(a, b, h.End) {
			return true
		}
	}
	return false
}

// phantomReuse catches a key rejected as reused before its scope had sent
// any other payload. When another tenant or endpoint had used the same
// key before, the service matched its record: a global key space. An
// identical retry rejected so is replay-identical's to report; a first use
// rejected so, with no other use of the key anywhere, is reported here.
func (c reuseRejected) phantomReuse(h *history.History, s scope, idx []int32, order scopeList, groups scopeGroups, same []int, checked *int) (Violation, bool) {
	ct := &c.cfg.contract
	if c.cfg.profile().Reuse == 0 || c.cfg.profile().Refuse != 0 {
		// A service that refuses every repeat refuses an identical one
		// too: that is its contract, not a phantom reuse.
		return Violation{}, false
	}
	// The scope's first payload, sent alone and seen to reach the service,
	// claimed the key in its scope: a reuse answer to it is a phantom even
	// once other payloads of the scope have followed.
	// A failure releases the claim, and another payload may then take the
	// key: only a claim that no 5xx released and no other payload's
	// success took over stands.
	first := firstAlone(h, idx, ct)
	if first >= 0 && !reached(h, &h.Attempts[first]) {
		first = -1
	}
	for _, i := range idx {
		if first < 0 {
			break
		}
		b := &h.Attempts[i]
		mine := ct.distinct(b) == ct.distinct(&h.Attempts[first])
		if (mine && b.Outcome == history.OK && b.Status >= 500) || (!mine && classify(b, c.cfg.profile()) == succeeded) {
			first = -1
		}
	}
	for n, i := range idx {
		a := &h.Attempts[i]
		if a.Outcome != history.OK || a.Status != c.cfg.profile().Reuse {
			continue
		}
		claimed := first >= 0 && ct.distinct(a) == ct.distinct(&h.Attempts[first])
		if !claimed && otherPayloadBefore(h, idx, a, ct) {
			continue // another payload of this scope came first: a fair reuse answer
		}
		if ct.Fingerprint != FingerprintCanonical && otherBytesBefore(h, idx, a, ct) {
			continue // a reformatted body may count as another payload: a fair rejection
		}
		*checked++
		v := Violation{
			Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: a.Intent, Ops: []int64{a.Op},
		}
		o := otherScopeBefore(h, s, a, order, groups, same)
		if o == nil {
			// The other scope's first attempt may be recorded a moment
			// after this answer while it reached the service first.
			o = otherScopeBefore(h, s, &history.Attempt{Complete: h.End}, order, groups, same)
		}
		if o != nil {
			v.Ops = []int64{o.Op, a.Op}
			before := "before this tenant and endpoint had sent any other payload with it"
			if claimed && otherPayloadBefore(h, idx, a, ct) {
				before = fmt.Sprintf("on the payload that first used the key in this tenant and endpoint, sent alone (op %d)", h.Attempts[first].Op)
			}
			v.Explanation = fmt.Sprintf("%s was rejected with %d as a reused key (op %d), %s; tenant %s used the same key on %s %s (op %d), and a key is only reused within its own (tenant, endpoint) scope.",
				describeScope(s), a.Status, a.Op, before, o.Tenant, o.Method, o.Path, o.Op)
			v.Cause = "the key's scope is wider than (tenant, endpoint, key): one global key space, so another tenant's (or endpoint's) record with the same key was found"
			return v, true
		}
		if n > 0 {
			return Violation{}, false // an identical retry: replay-identical judges it
		}
		v.Explanation = fmt.Sprintf("%s was rejected with %d as a reused key on its first use (op %d), though no request anywhere in the history had used the key before; a key is reused only by its own scope.",
			describeScope(s), a.Status, a.Op)
		v.Cause = "the service found a record for a key nobody had sent: keys are not scoped per tenant and endpoint, or records from other clients or earlier runs collide with it"
		return v, true
	}
	return Violation{}, false
}

// scopesByKey lists the scopes of each key, in order.
func scopesByKey(order scopeList) map[string][]int {
	m := make(map[string][]int)
	for g := range order.len() {
		s := order.at(g)
		m[s.key] = append(m[s.key], g)
	}
	return m
}

// otherScopeBefore returns the first attempt of another scope with the same
// key invoked before a ended, or nil.
func otherScopeBefore(h *history.History, s scope, a *history.Attempt, order scopeList, groups scopeGroups, same []int) *history.Attempt {
	var first *history.Attempt
	for _, g := range same {
		if order.at(g) == s {
			continue
		}
		b := &h.Attempts[groups.at(g)[0]]
		if b.Invoke < a.End(h.End) && (first == nil || b.Invoke < first.Invoke) {
			first = b
		}
	}
	return first
}

// reuseRejectedSomewhere reports whether the service rejected a reused key
// with another payload anywhere in the history: then it does keep a
// fingerprint, and a reuse it let through points at a loose comparison.
func reuseRejectedSomewhere(h *history.History, order scopeList, groups scopeGroups, p Profile, ct *Contract) bool {
	for g := range order.len() {
		idx := groups.at(g)
		if len(idx) < 2 || !severalPayloads(h, idx, ct) {
			continue
		}
		// A payload refused as a reuse while another was accepted with
		// the key: whichever the service stored (the first to arrive is
		// not always the first invoked: a copy in flight, a retry).
		// Two accepted payloads at the most tell it: one other than the
		// refused one's is among them.
		var accepted [2]uint64
		n := 0
		for _, i := range idx {
			if o := &h.Attempts[i]; n < 2 && classify(o, p) == succeeded && (n == 0 || ct.distinct(o) != accepted[0]) {
				accepted[n] = ct.distinct(o)
				n++
			}
		}
		for _, i := range idx {
			if a := &h.Attempts[i]; a.Outcome == history.OK && a.Status == p.Reuse && (n == 2 || (n == 1 && accepted[0] != ct.distinct(a))) {
				return true
			}
		}
	}
	return false
}

// hasStatus reports an attempt answered with status (0: none can be).
func hasStatus(h *history.History, idx []int32, status int) bool {
	if status == 0 {
		return false
	}
	for _, i := range idx {
		if a := &h.Attempts[i]; a.Outcome == history.OK && a.Status == status {
			return true
		}
	}
	return false
}

// reached says the attempt is known to have reached the service: the
// service answered it, or the fault proxy dropped the answer the service
// gave.
func reached(h *history.History, a *history.Attempt) bool {
	if a.Outcome == history.OK && (!a.Proxied || a.Forwarded) {
		return true
	}
	for _, f := range h.Faults {
		if f.Op == a.Op && f.Kind == "response-drop" {
			return true
		}
	}
	return false
}

// otherBytesBefore reports an attempt of the scope with a's payload written
// with other body bytes (a reformatted copy) sent before a ended.
func otherBytesBefore(h *history.History, idx []int32, a *history.Attempt, ct *Contract) bool {
	end := a.End(h.End)
	for _, i := range idx {
		b := &h.Attempts[i]
		if b.Invoke >= end {
			return false
		}
		if b.ReqHash != a.ReqHash && ct.distinct(b) == ct.distinct(a) {
			return true
		}
	}
	return false
}
