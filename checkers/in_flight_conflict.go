package checkers

import (
	"container/heap"
	"fmt"

	"github.com/idemchaos/idemchaos/history"
)

// Started early: long, and needing no attribution, it keeps another
// processor busy while exactly-once builds it.
func init() {
	Register(Registration{Name: "in-flight-conflict", New: InFlightConflict, Suites: map[string]int{SuiteServer: 4}, Start: 3})
}

// InFlightConflict returns the checker of "in-flight-conflict": a duplicate
// that arrives while the first attempt with its key is still running gets the
// in-flight status (default 409) or waits and gets the first response — never
// a second execution, never a 2xx with a different body, never a 500 (the
// store's duplicate-key error leaking). Two attempts are concurrent only if
// their invoke→complete intervals overlap.
//
// Each key is judged by one sweep over its attempts in invoke order, keeping
// per payload how many attempts are still open and which answers they got,
// so a hot key with tens of thousands of attempts costs n log n, not n².
func InFlightConflict(opts ...Option) Checker { return inFlightConflict{newConfig(opts)} }

type inFlightConflict struct{ cfg config }

var _ Checker = inFlightConflict{}

func (inFlightConflict) Name() string { return "in-flight-conflict" }

func (c inFlightConflict) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c inFlightConflict) check(ix *index) Part {
	h, effects := ix.h, ix.effects
	r := Part{Result: Result{Name: c.Name()}}
	order, groups := ix.byScope()
	var dups map[tenantKey]string
	var active []span // faults in force, built on the first 500
	unfaulted := func(b *history.Attempt) bool {
		if active == nil {
			active = faultSpans(h)
		}
		return !hitByFault(h, b, active)
	}
	left := 0
	for g := range order.len() {
		s := order.at(g)
		idx := groups.at(g)
		if len(idx) < 2 {
			continue
		}
		if ix.expired() {
			left++
			continue
		}
		if dups == nil {
			dups = duplicatedKeys(effects, multiKeys(order, groups))
		}
		sw := sweep{c: &c, h: h, idx: idx, dup: dups[tenantKey{s.tenant, s.key}] != "", unfaulted: unfaulted}
		a, b, overlapped := sw.run(ix)
		if overlapped {
			r.Checked++
		}
		if a < 0 {
			if a == sweepStopped {
				left++
			}
			continue
		}
		if v, bad := c.judge(h, s, &h.Attempts[a], &h.Attempts[b], dups); bad {
			r.Violations = append(r.Violations, v)
		}
	}
	r.t.left, r.t.keys, r.t.budget = left, order.len(), ix.budget
	return settleInFlight(r, h)
}

// mergeParts settles the whole from its parts, as a check does at its end:
// the keys the time budget left add up.
func (inFlightConflict) mergeParts(r Part, _ []Part, h *history.History) Part {
	return settleInFlight(r, h)
}

// settleInFlight gives the verdict and reason from the violations and the
// tally: the end of a check, and of a merge of checked parts.
func settleInFlight(r Part, h *history.History) Part {
	unknown := ""
	if left := r.t.left; left > 0 {
		unknown = budgetReason(r.t.budget, left, r.t.keys)
		if len(r.Violations) > 0 {
			r.Reason = unknown
		}
	}
	return finish(r, h, unknown)
}

// sweepStopped is run's first result when the budget ran out mid-key.
const sweepStopped = -2

// sweep finds the first duplicate of one key that overlapped an attempt
// with the same payload and was answered wrongly.
type sweep struct {
	c   *inFlightConflict
	h   *history.History
	idx []int32
	dup bool // the key has a duplicated effect
	// unfaulted says no fault was in force while an attempt ran.
	unfaulted func(*history.Attempt) bool
}

// answer identifies a response: the same answer means a faithful replay.
type answer struct {
	status int
	hash   uint64
	n      int
}

// open counts the attempts of one payload that are still running.
type open struct {
	all       int
	err500    int // answered 500 with no fault in force
	succ, def int // succeeded; succeeded or rejected (a definite answer)
	succBy    answerCounts
	defBy     answerCounts
}

// answerCounts counts open attempts by answer. A key's attempts get few
// distinct answers: a short list serves them without a map per key, and a
// map takes over past a handful (a hot key answered with many bodies).
type answerCounts struct {
	few  []answerCount
	many map[answer]int
}

type answerCount struct {
	k answer
	n int
}

const maxFewAnswers = 8

func (c *answerCounts) get(k answer) int {
	if c.many != nil {
		return c.many[k]
	}
	for _, e := range c.few {
		if e.k == k {
			return e.n
		}
	}
	return 0
}

func (c *answerCounts) add(k answer, d int) {
	if c.many != nil {
		c.many[k] += d
		return
	}
	for i := range c.few {
		if c.few[i].k == k {
			c.few[i].n += d
			return
		}
	}
	if len(c.few) < maxFewAnswers {
		c.few = append(c.few, answerCount{k, d})
		return
	}
	c.many = make(map[answer]int, 2*maxFewAnswers)
	for _, e := range c.few {
		c.many[e.k] = e.n
	}
	c.many[k] += d
	c.few = nil
}

// run returns the violating pair (a, b) as attempt indices, or a < 0; and
// whether any two attempts with the same payload overlapped.
func (sw *sweep) run(ix *index) (a, b int32, overlapped bool) {
	h, p, ct := sw.h, sw.c.cfg.profile(), &sw.c.cfg.contract
	byPayload := make(map[uint64]*open, 2)
	ends := endHeap{h: h}
	for n, y := range sw.idx {
		if n&4095 == 4095 && ix.expired() {
			return sweepStopped, 0, overlapped
		}
		bb := &h.Attempts[y]
		// Close what ended before b started.
		for len(ends.idx) > 0 && h.OpenUntil(&h.Attempts[ends.idx[0]]) <= bb.Invoke {
			x := heap.Pop(&ends).(int32)
			a := &h.Attempts[x]
			o := byPayload[ct.same(a)]
			o.remove(a, p)
			if sw.own500(a) {
				o.err500--
			}
		}
		o := byPayload[ct.same(bb)]
		if o != nil && o.all > 0 {
			overlapped = true
			if sw.suspect(o, bb, p) {
				if x := sw.witness(n); x >= 0 {
					return x, y, true
				}
			}
			// The other way round: b, a definite answer, overlapped a copy
			// sent before it that got a 500. Copies released together reach
			// the service in any order, and the service may well have run
			// the later one first.
			if o.err500 > 0 && definite(bb, p) {
				if x := sw.earlier500(n); x >= 0 {
					return y, x, true
				}
			}
		}
		if o == nil {
			o = &open{}
			byPayload[ct.same(bb)] = o
		}
		o.add(bb, p)
		if sw.own500(bb) {
			// Counted only when unfaulted: earlier500 then always finds
			// one, and a hot key's faulted 500s never make it scan.
			o.err500++
		}
		heap.Push(&ends, y)
	}
	return -1, 0, overlapped
}

// suspect says whether some open attempt with b's payload may make b a
// violation; witness then finds the first such attempt exactly.
func (sw *sweep) suspect(o *open, b *history.Attempt, p Profile) bool {
	cb := classify(b, p)
	ab := answerOf(b)
	if refusedRepeat(b, p) {
		return false // the contract's answer to every repeat (repeat: refuse)
	}
	switch {
	case cb == succeeded && (sw.dup || o.succ-o.succBy.get(ab) > 0):
		return true
	case cb == rejected && b.Outcome == history.OK && o.def-o.defBy.get(ab) > 0:
		return true
	case b.Outcome == history.OK && b.Status == 500 && o.def > 0:
		return sw.unfaulted(b)
	}
	return false
}

// witness returns the first attempt before the n-th that overlaps it with the
// same payload and makes it a violation, or -1. It runs once per suspect.
func (sw *sweep) witness(n int) int32 {
	h, ct := sw.h, &sw.c.cfg.contract
	b := &h.Attempts[sw.idx[n]]
	for _, x := range sw.idx[:n] {
		a := &h.Attempts[x]
		if ct.same(a) != ct.same(b) || !overlapsOpen(h, a, b) {
			continue
		}
		if sw.c.pairBad(a, b, sw.dup) {
			return x
		}
	}
	return -1
}

// earlier500 returns the first attempt before the n-th, with its payload,
// that overlaps it and got a 500 with no fault in force, or -1.
func (sw *sweep) earlier500(n int) int32 {
	h, ct := sw.h, &sw.c.cfg.contract
	b := &h.Attempts[sw.idx[n]]
	for _, x := range sw.idx[:n] {
		a := &h.Attempts[x]
		if is500(a) && ct.same(a) == ct.same(b) && overlapsOpen(h, a, b) && sw.unfaulted(a) {
			return x
		}
	}
	return -1
}

// own500 says a answered 500 with no fault in force: the service's own.
func (sw *sweep) own500(a *history.Attempt) bool { return is500(a) && sw.unfaulted(a) }

// is500 says the service itself answered 500.
func is500(a *history.Attempt) bool { return a.Outcome == history.OK && a.Status == 500 }

func answerOf(a *history.Attempt) answer { return answer{a.Status, a.RespHash, a.RespLen} }

func (o *open) add(a *history.Attempt, p Profile) { o.step(a, p, 1) }

func (o *open) remove(a *history.Attempt, p Profile) { o.step(a, p, -1) }

func (o *open) step(a *history.Attempt, p Profile, d int) {
	o.all += d
	cl := classify(a, p)
	if a.Outcome != history.OK || (cl != succeeded && cl != rejected) {
		return
	}
	k := answerOf(a)
	o.def += d
	o.defBy.add(k, d)
	if cl == succeeded {
		o.succ += d
		o.succBy.add(k, d)
	}
}

// endHeap orders open attempts by their end.
type endHeap struct {
	h   *history.History
	idx []int32
}

func (e endHeap) Len() int { return len(e.idx) }
func (e endHeap) Less(i, j int) bool {
	return e.h.OpenUntil(&e.h.Attempts[e.idx[i]]) < e.h.OpenUntil(&e.h.Attempts[e.idx[j]])
}
func (e endHeap) Swap(i, j int) { e.idx[i], e.idx[j] = e.idx[j], e.idx[i] }
func (e *endHeap) Push(x any)   { e.idx = append(e.idx, x.(int32)) }
func (e *endHeap) Pop() any {
	x := e.idx[len(e.idx)-1]
	e.idx = e.idx[:len(e.idx)-1]
	return x
}

// pairBad reports whether b, a duplicate that overlapped a, was answered
// wrongly (see judge for the words).
func (c inFlightConflict) pairBad(a, b *history.Attempt, dup bool) bool {
	p := c.cfg.profile()
	if refusedRepeat(b, p) {
		return false // the contract's answer to every repeat (repeat: refuse)
	}
	cb := classify(b, p)
	same := sameAnswer(a, b)
	switch {
	case cb == succeeded && classify(a, p) == succeeded && !same:
		return true
	case cb == succeeded && dup:
		return true
	case cb == rejected && b.Outcome == history.OK && definite(a, p) && !same:
		return true
	case b.Outcome == history.OK && b.Status == 500 && definite(a, p):
		return true
	}
	return false
}

func sameAnswer(a, b *history.Attempt) bool {
	return a.Outcome == history.OK && b.Outcome == history.OK && a.Status == b.Status && a.RespHash == b.RespHash && a.RespLen == b.RespLen
}

// judge words the violation of b, a duplicate that overlapped a.
func (c inFlightConflict) judge(h *history.History, s scope, a, b *history.Attempt, dups map[tenantKey]string) (Violation, bool) {
	v := Violation{Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent, Ops: []int64{a.Op, b.Op}}
	p := c.cfg.profile()
	cb := classify(b, p)
	same := sameAnswer(a, b)
	switch {
	case cb == succeeded && classify(a, p) == succeeded && !same:
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and was executed again (%d with body %s, where op %d got %s); it must get %d or wait for the first response.",
			describeScope(s), b.Op, a.Op, b.Status, quoteBody(b), a.Op, quoteBody(a), p.InFlight)
	case cb == succeeded && dups[tenantKey{s.tenant, s.key}] != "":
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and got %d, and the key has %s; a duplicate in flight must get %d or wait for the first response, never execute.",
			describeScope(s), b.Op, a.Op, b.Status, dups[tenantKey{s.tenant, s.key}], p.InFlight)
	case cb == rejected && b.Outcome == history.OK && definite(a, p) && !same:
		// Only a definite answer of the service itself is the "first
		// response" b should match: a gateway's 504 or a 429 hid it.
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running and got %d; it must get %d or wait for the first response (%d).",
			describeScope(s), b.Op, a.Op, b.Status, p.InFlight, a.Status)
		v.Cause = "the in-flight answer differs from the contract profile"
		return v, true
	case b.Outcome == history.OK && b.Status == 500 && definite(a, p) && b.Invoke < a.Invoke:
		v.Explanation = fmt.Sprintf("%s: op %d and op %d, copies of one request, were in flight together; op %d got %d and op %d was answered 500 with %s, with no fault in force; a duplicate in flight must get %d or wait for the first response.",
			describeScope(s), b.Op, a.Op, a.Op, a.Status, b.Op, quoteBody(b), p.InFlight)
		v.Cause = "the store's duplicate-key error leaks: the duplicate hit the unique claim and the error was not turned into the in-flight status or the replay"
		return v, true
	case b.Outcome == history.OK && b.Status == 500 && definite(a, p):
		v.Explanation = fmt.Sprintf("%s: op %d arrived while op %d was still running (op %d then got %d) and was answered 500 with %s, with no fault in force; a duplicate in flight must get %d or wait for the first response.",
			describeScope(s), b.Op, a.Op, a.Op, a.Status, quoteBody(b), p.InFlight)
		v.Cause = "the store's duplicate-key error leaks: the duplicate hit the unique claim and the error was not turned into the in-flight status or the replay"
		return v, true
	default:
		return v, false
	}
	v.Cause = "a record in 'processing' is treated as absent, so the duplicate runs the business write again"
	if a.Outcome == history.Info && a.Complete >= 0 && a.Complete <= b.Invoke {
		// a had timed out on the client before b was sent: only the
		// settle says it was still running on the server.
		v.Explanation = fmt.Sprintf("%s: op %d was sent after op %d had timed out on the client but while its work was still running on the server (until the service quiesced at %s), and got %d, and the key has %s; a duplicate while the first runs must get %d or wait for the first response, never execute.",
			describeScope(s), b.Op, a.Op, at(h.OpenUntil(a)), b.Status, dups[tenantKey{s.tenant, s.key}], p.InFlight)
		v.Cause = "a second execution overlapped a timed-out attempt that was still running on the server: the claim was not held across instances (or not atomic)"
	}
	return v, true
}

// definite reports a success or a rejection: an answer the service gave,
// not a timeout, a 5xx or a "not now".
func definite(a *history.Attempt, p Profile) bool {
	cl := classify(a, p)
	return a.Outcome == history.OK && (cl == succeeded || cl == rejected)
}

// span is a time a fault that was not aimed at one attempt was in force:
// from its fire to its heal (or the end of the history).
type span struct{ from, to int64 }

func faultSpans(h *history.History) []span {
	out := []span{}
	fired := map[string]int64{}
	for _, f := range h.Faults {
		if f.Op != 0 || !canFail(f.Kind) {
			continue // aimed at one attempt (hitByFault sees it by op), or harmless to the service
		}
		switch f.Action {
		case "heal":
			if t, ok := fired[f.Kind]; ok {
				out = append(out, span{t, f.NS})
				delete(fired, f.Kind)
			}
		default:
			if _, ok := fired[f.Kind]; !ok {
				fired[f.Kind] = f.NS
			}
		}
	}
	for _, t := range fired {
		out = append(out, span{t, h.End})
	}
	return out
}

// hitByFault reports whether a fault hit b or was in force while it ran: a
// 500 then says nothing about the service's own handling.
func hitByFault(h *history.History, b *history.Attempt, active []span) bool {
	for _, s := range active {
		if s.from <= b.End(h.End) && b.Invoke <= s.to {
			return true
		}
	}
	for _, f := range h.Faults {
		if f.Op == b.Op && canFail(f.Kind) {
			return true
		}
	}
	return false
}

// canFail reports whether a fault of the kind can make the service (or a
// hop in front of it) answer 5xx. Faults on the client's side of the
// exchange — a dropped response, extra copies of a request, a slow link, a
// proxy's 429, a purge — cannot: a 500 under them is the service's own.
// An unknown kind is assumed able to.
func canFail(kind string) bool {
	switch kind {
	case "response-drop", "double-click", "duplicate-delivery", "latency", "rate-limit", "retention-expiry":
		return false
	}
	return true
}

// multiKeys returns the (tenant, key) of every scope with two or more
// attempts: the only keys judge asks duplicatedKeys about.
func multiKeys(order scopeList, groups scopeGroups) map[tenantKey]bool {
	n := 0
	for g := range order.len() {
		if len(groups.at(g)) >= 2 {
			n++
		}
	}
	m := make(map[tenantKey]bool, n)
	for g := range order.len() {
		s := order.at(g)
		if len(groups.at(g)) >= 2 {
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
			out[k.tk] = countOf(n[k], e.Kind)
		}
	}
	return out
}
