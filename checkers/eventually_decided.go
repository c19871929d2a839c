package checkers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// Started early, after the long checks that need no attribution.
func init() {
	Register(Registration{Name: "eventually-decided", New: EventuallyDecided, Suites: map[string]int{SuiteServer: 6}, Start: 4})
}

// EventuallyDecided returns the checker of "eventually-decided": after the
// faults heal, retries of a key get a definite answer (a success or a
// rejection, not the in-flight status, 429 or 5xx) within the decision bound
// (default 5s, see [WithDecisionBound]).
//
// The clock for a key starts at its first attempt after the last heal event
// that precedes its last attempt (or at its first attempt when nothing
// healed), or at a later heal that precedes its first definite answer. Attempts a fault was aimed at are not evidence either way. A key
// whose client stopped asking before the bound ran out cannot be judged;
// when more than half the keys are like that the verdict is unknown.
func EventuallyDecided(opts ...Option) Checker { return eventuallyDecided{newConfig(opts)} }

type eventuallyDecided struct{ cfg config }

var _ Checker = eventuallyDecided{}

func (eventuallyDecided) Name() string { return "eventually-decided" }

func (c eventuallyDecided) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c eventuallyDecided) check(ix *index) Part {
	h := ix.h
	r := Part{Result: Result{Name: c.Name()}}
	var heals []int64
	hit := make(map[int64]bool)
	for _, f := range h.Faults {
		if f.Action == "heal" {
			heals = append(heals, f.NS)
		}
		if f.Op != 0 {
			hit[f.Op] = true
		}
	}
	slices.Sort(heals)
	order, groups := ix.byScope()
	j := decisions{c: c, h: h, heals: heals, hit: hit, r: &r, keys: order.len()}
	var payloads [][]int32
	for g := range order.len() {
		s := order.at(g)
		// Each payload under the key is judged alone: a reuse's 422
		// decides the reuse, not the payload whose record is stuck.
		payloads = byPayload(h, groups.at(g), &c.cfg.contract, payloads[:0])
		for _, idx := range payloads {
			j.judge(s, idx, len(payloads) > 1)
		}
	}
	r.t.undecidable, r.t.bound = j.undecidable, c.cfg.contract.DecisionBound
	return settleEventuallyDecided(r, h)
}

// decisions is one check of eventually-decided under way: what it reads
// of the whole history, and what it has found so far.
type decisions struct {
	c     eventuallyDecided
	h     *history.History
	heals []int64        // every heal, sorted
	hit   map[int64]bool // the attempts a fault was aimed at
	r     *Part
	keys  int
	// undecidable counts the payloads whose client stopped before the bound.
	undecidable int
	successes   []int64     // completion times of every success, sorted, built on demand
	rate        failureRate // how often the service answers 5xx, built on demand
	overload    int8        // overloadedRun's answer: 0 not read yet, 1 no, 2 yes
}

// overloadedRun says the run injected no fault and its service refused
// connections somewhere (see overloaded).
func (j *decisions) overloadedRun() bool {
	if j.overload == 0 {
		j.overload = 1
		if !faultInjected(j.h) {
			for i := range j.h.Attempts {
				if connectionLevel(&j.h.Attempts[i]) {
					j.overload = 2
					break
				}
			}
		}
	}
	return j.overload == 2
}

// byPayload splits a key's attempts (sorted by invoke time) by payload —
// the fingerprint under which a retry must get the first one's replay —
// in the order each payload first appears, appending to out.
func byPayload(h *history.History, idx []int32, ct *Contract, out [][]int32) [][]int32 {
	first := ct.same(&h.Attempts[idx[0]])
	if !slices.ContainsFunc(idx, func(i int32) bool { return ct.same(&h.Attempts[i]) != first }) {
		return append(out, idx)
	}
	at := make(map[uint64]int)
	for _, i := range idx {
		fp := ct.same(&h.Attempts[i])
		n, ok := at[fp]
		if !ok {
			n = len(out)
			at[fp] = n
			out = append(out, nil)
		}
		out[n] = append(out[n], i)
	}
	return out
}

// judge judges one payload's attempts under key s (idx, sorted by invoke
// time): a violation, a payload whose client stopped before the bound, or
// a decision in time. A violation of a key with several payloads names the
// payload's intent.
func (j *decisions) judge(s scope, idx []int32, several bool) {
	c, h, heals, hit, r := j.c, j.h, j.heals, j.hit, j.r
	bound := int64(c.cfg.contract.DecisionBound)
	var last int64
	for _, i := range idx {
		last = max(last, h.Attempts[i].Invoke)
	}
	// The last heal at or before the payload's last attempt (0 for none).
	var healed int64
	if n, _ := slices.BinarySearch(heals, last+1); n > 0 {
		healed = max(heals[n-1], 0)
	}
	evidence := func(a *history.Attempt) bool { return a.Invoke >= healed && !hit[a.Op] }
	first, lastAsked, decided := int64(-1), int64(-1), int64(-1)
	stuck := false // some retry was told the key is still in flight
	for _, i := range idx {
		a := &h.Attempts[i]
		if !evidence(a) {
			continue
		}
		if first < 0 || a.Invoke < first {
			first = a.Invoke
		}
		lastAsked = max(lastAsked, a.Invoke)
		stuck = stuck || (a.Outcome == history.OK && a.Status == c.cfg.profile().InFlight)
		if cl := classify(a, c.cfg.profile()); (cl == succeeded || cl == rejected) && a.Outcome == history.OK {
			if decided < 0 || a.Complete < decided {
				decided = a.Complete
			}
		}
	}
	if first < 0 {
		return
	}
	r.Checked++
	if g := c.cfg.globals; g != nil {
		j.successes, j.rate = g.Successes, g.rate()
	}
	if j.successes == nil {
		j.successes = successTimes(h, c.cfg.profile())
	}
	if j.rate.keys == 0 {
		j.rate = failureRateOf(h, j.keys)
	}
	if v, bad := c.cached5xx(h, s, idx, evidence, j.successes, j.rate); bad {
		r.Violations = append(r.Violations, v)
		return
	}
	if decided >= 0 {
		// A heal between the first attempt and the decision restarts
		// the clock: a retry sent while a crashed service was still
		// coming back, and answered once it was up, was decided after
		// the faults healed — the downtime is the fault's, not the
		// service's.
		if n, _ := slices.BinarySearch(heals, decided+1); n > 0 && heals[n-1] > first {
			healed = heals[n-1]
			first = healed
		}
	}
	if decided >= 0 && decided-first <= bound {
		if v, bad := c.stuckAfterSuccess(h, s, idx, evidence, bound); bad {
			r.Violations = append(r.Violations, v)
		}
		return
	}
	if decided < 0 && lastAsked-first < bound {
		j.undecidable++
		return
	}
	var ops []int64
	for _, i := range idx {
		if a := &h.Attempts[i]; evidence(a) {
			ops = append(ops, a.Op)
		}
	}
	intent, which := "", ""
	if several {
		intent = h.Attempts[idx[0]].Intent
		which = fmt.Sprintf("(the payload of intent %s; the key's other payloads are judged on their own) ", intent)
	}
	if decided >= 0 {
		v := c.violation(h, s, intent, ops, which+fmt.Sprintf("got its first definite answer only %s after its first attempt", time.Duration(decided-first).Round(time.Millisecond)), healed, stuck)
		if !v.Setup && !stuck && j.overloadedRun() && overloaded(h, ops, c.cfg.profile()) {
			// Decided in the end, late, after bare timeouts, in a run
			// whose service refused connections and had no fault: a
			// request waiting in a full accept queue times out like a
			// slow one, and is the same overload.
			v.Cause, v.Setup = capacityCause, true
		}
		if stuck && faulted(h, "crash") {
			// The record was taken over in the end: a lease, longer
			// than the bound.
			v.Cause = fmt.Sprintf("a 'processing' record whose holder died is taken over only when its lease expires, and that lease is longer than the scenario's decision bound: the takeover came %s after %s, the bound is %s; shorten the lease below the bound (or raise eventually-decided's bound if the service promises no better)",
				time.Duration(decided-first).Round(time.Millisecond), sinceWhat(healed), c.cfg.contract.DecisionBound)
		}
		r.Violations = append(r.Violations, v)
	} else {
		v := c.violation(h, s, intent, ops, which+fmt.Sprintf("was still undecided %s after its first attempt (answers: %s)", time.Duration(lastAsked-first).Round(time.Millisecond), answersOps(h, idx, ops)), healed, stuck)
		if stuck && faulted(h, "crash") {
			v.Cause = fmt.Sprintf("a 'processing' record whose holder died has no lease (no takeover in the %s the retries waited after %s, against a decision bound of %s), so it blocks every retry forever",
				time.Duration(lastAsked-first).Round(time.Millisecond), sinceWhat(healed), c.cfg.contract.DecisionBound)
		}
		r.Violations = append(r.Violations, v)
	}
}

// settleEventuallyDecided gives the verdict and reason from the violations
// and the tally: the end of a check, and of a merge of checked parts.
func settleEventuallyDecided(r Part, h *history.History) Part {
	undecidable := r.t.undecidable
	unknown := ""
	if r.Checked > 0 && len(r.Violations) == 0 && undecidable*2 > r.Checked {
		unknown = fmt.Sprintf("%d of %d keys stopped retrying before the %s bound without a definite answer, too many to judge", undecidable, r.Checked, r.t.bound)
	} else if undecidable > 0 {
		r.Reason = fmt.Sprintf("%d %s stopped retrying before the bound and %s not judged", undecidable, plural(undecidable, "key", "keys"), plural(undecidable, "was", "were"))
	}
	return finish(r, h, unknown)
}

// mergeParts settles the whole from its parts, as a check does at its end:
// the keys that stopped early add up.
func (eventuallyDecided) mergeParts(r Part, _ []Part, h *history.History) Part {
	return settleEventuallyDecided(r, h)
}

// sinceWhat names the moment a key's clock started: the last heal, or its
// first attempt.
func sinceWhat(healed int64) string {
	if healed > 0 {
		return "the faults healed at " + at(healed)
	}
	return "its first attempt"
}

func (c eventuallyDecided) violation(h *history.History, s scope, intent string, ops []int64, what string, healed int64, stuck bool) Violation {
	since := "its first attempt"
	if healed > 0 {
		since = "the faults healed at " + at(healed)
	}
	// Only an in-flight answer points at an orphaned claim; a key that only
	// ever saw timeouts or 5xx points at a service that did not recover.
	cause := "the service kept answering with timeouts or 5xx instead of a decision: it did not recover from the fault, or retries hit a dead dependency"
	if !faultInjected(h) {
		cause = "the service kept answering with timeouts or 5xx instead of a decision, with no fault injected: a dependency it calls is failing, or it cannot take the load"
	}
	setup := false
	switch {
	case !stuck && identical5xx(h, ops):
		cause = "an error is stored as the final answer: every retry got the same 5xx, byte for byte, with no fault injected (the stored error replayed, unless a dependency fails the same way every time) — a failed execution must release the key (or store nothing), not cache the error"
	case !stuck && refusedConnections(h, ops, c.cfg.profile()):
		cause, setup = capacityCause, true
	case stuck && faulted(h, "crash"):
		cause = "a 'processing' record whose holder died has no lease, so it blocks every retry forever"
	case stuck:
		cause = "the key's 'processing' record is never completed or released (no lease, or the outcome of the first attempt is never written), so every retry is told it is still in flight"
	}
	return Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: intent, Ops: ops,
		Explanation: fmt.Sprintf("%s %s, counting from %s; a retry must get a definite answer within %s.",
			describeScope(s), what, since, c.cfg.contract.DecisionBound),
		Cause: cause, Setup: setup,
	}
}

// capacityCause is the cause of a key a service out of capacity left
// undecided: a setup problem of the target ([Violation.Setup]).
const capacityCause = "the service did not accept connections (capacity): every attempt without a decision was refused, reset or timed out before a connection was made, none answered 5xx; raise its listen backlog or worker count, or lower traffic.concurrency"

// overloaded says a key's undecided attempts were refused at the
// connection or timed out with nothing read, none answered 5xx: in an
// overloaded run ([decisions.overloadedRun]) a connection the kernel queued
// but the service never accepted times out like a slow request.
func overloaded(h *history.History, ops []int64, p Profile) bool {
	return everyUndecided(h, ops, p, func(a *history.Attempt) bool {
		return connectionLevel(a) || (a.Outcome == history.Info && strings.HasPrefix(strings.ToLower(a.Error), "timeout after"))
	})
}

// refusedConnections says every attempt of ops that got no decision failed
// at the connection — refused, reset before a byte of the answer was read,
// a connect that timed out — rather than with an answer (5xx) or a timeout
// of a request the service had: a service out of capacity, not one that
// cannot decide.
func refusedConnections(h *history.History, ops []int64, p Profile) bool {
	return everyUndecided(h, ops, p, connectionLevel)
}

// everyUndecided says the ops hold an attempt without a decision, and
// every one of them is as ok says.
func everyUndecided(h *history.History, ops []int64, p Profile, ok func(*history.Attempt) bool) bool {
	want := make(map[int64]bool, len(ops))
	for _, o := range ops {
		want[o] = true
	}
	n := 0
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if !want[a.Op] {
			continue
		}
		if cl := classify(a, p); a.Outcome == history.OK && (cl == succeeded || cl == rejected) {
			continue
		}
		if !ok(a) {
			return false
		}
		n++
	}
	return n > 0
}

// connectionLevel says an attempt failed at the connection: never sent
// (refused), or no status read and the error is a reset, an EOF, a refusal
// or a connect timeout (the driver words it "no connection was made").
func connectionLevel(a *history.Attempt) bool {
	switch a.Outcome {
	case history.Fail:
		return true
	case history.Info:
		e := strings.ToLower(a.Error)
		if strings.HasPrefix(e, "status ") {
			return false // the status arrived: the service had the request
		}
		for _, s := range []string{"connection refused", "connection reset", "no connection was made", "eof", "broken pipe"} {
			if strings.Contains(e, s) {
				return true
			}
		}
	}
	return false
}

func answersOps(h *history.History, idx []int32, ops []int64) string {
	want := make(map[int64]bool, len(ops))
	for _, o := range ops {
		want[o] = true
	}
	var sel []int32
	for _, i := range idx {
		if want[h.Attempts[i].Op] {
			sel = append(sel, i)
		}
	}
	if len(sel) > 6 {
		return answers(h, sel[:6]) + ", …"
	}
	return answers(h, sel)
}

// cached5xx catches a key whose retries all got the very same 5xx while
// other keys succeeded meanwhile: the service stored the error as the key's
// response and replays it, so no retry can ever succeed. Two identical
// answers suffice when the service marked the later ones replayed;
// otherwise so many are needed that failures at the history's 5xx rate
// could not plausibly have repeated by chance (see [unlikely]).
func (c eventuallyDecided) cached5xx(h *history.History, s scope, idx []int32, evidence func(*history.Attempt) bool, successes []int64, rate failureRate) (Violation, bool) {
	// One payload is judged: the first that got a 5xx. Another payload
	// under the key (a reformatted probe, a reuse) has answers of its own.
	var same []int32
	var want answer
	var fp uint64
	marked, found := false, false
	ct := &c.cfg.contract
	var firstDone int64 // when the first 5xx was answered
	for _, i := range idx {
		if a := &h.Attempts[i]; evidence(a) && a.Outcome == history.OK && a.Status >= 500 {
			found, fp, firstDone = true, ct.same(a), a.Complete
			break
		}
	}
	if !found {
		return Violation{}, false
	}
	before, from := 0, int64(-1) // the copies sent while the first 5xx ran; the payload's first attempt
	for _, i := range idx {
		a := &h.Attempts[i]
		if !evidence(a) || ct.same(a) != fp {
			continue
		}
		if from < 0 || a.Invoke < from {
			from = a.Invoke
		}
		if !(a.Outcome == history.OK && a.Status >= 500) && a.Invoke < firstDone {
			// Sent before the first 5xx was answered: a copy told the key
			// is in flight (the 5xx's execution held it), or one with no
			// answer, decided nothing; anything else did.
			if a.Outcome == history.OK && a.Status != c.cfg.profile().InFlight {
				return Violation{}, false
			}
			before++
			continue
		}
		if a.Outcome != history.OK || a.Status < 500 {
			return Violation{}, false
		}
		if len(same) == 0 {
			want = answerOf(a)
		} else if answerOf(a) != want {
			return Violation{}, false
		}
		same = append(same, i)
		for _, f := range a.RespHeaders {
			if strings.HasSuffix(strings.ToLower(f.Name), "replayed") && strings.EqualFold(f.Value, "true") {
				marked = true
			}
		}
	}
	if len(same) < 2 || (!marked && !unlikely(len(same), rate)) {
		return Violation{}, false
	}
	to := h.Attempts[same[len(same)-1]].Complete
	n, _ := slices.BinarySearch(successes, from)
	if n == len(successes) || successes[n] > to {
		return Violation{}, false // nothing else succeeded meanwhile: the service may be down
	}
	ops := opsOf(h, same)
	a := &h.Attempts[same[0]]
	which := fmt.Sprintf("all %d of its attempts", len(same))
	if before > 0 {
		which = fmt.Sprintf("all %d of its other attempts (%d sent before the first of them was answered %s told the key was in flight, or got no answer)", len(same), before, plural(before, "was", "were"))
	}
	return Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: a.Intent, Ops: ops,
		Explanation: fmt.Sprintf("%s got the same %d with %s to %s (%s), while other keys succeeded at %s; a retry after a failure must be able to succeed.",
			describeScope(s), a.Status, quoteBody(a), which, opList(ops), at(successes[n])),
		Cause: "the service stored the 5xx as the key's response and replays it: a failed execution must release the key (or store nothing), not cache the error",
	}, true
}

// successTimes returns when every success of the history arrived, sorted.
func successTimes(h *history.History, p Profile) []int64 {
	n := 0
	for i := range h.Attempts {
		if classify(&h.Attempts[i], p) == succeeded {
			n++
		}
	}
	out := make([]int64, 0, n)
	for i := range h.Attempts {
		if a := &h.Attempts[i]; classify(a, p) == succeeded {
			out = append(out, a.Complete)
		}
	}
	slices.Sort(out)
	return out
}

// stuckAfterSuccess catches a key decided by a success whose identical
// retries, sent after the success arrived, were then told "in flight" for
// longer than the bound without ever getting the replay: to those clients
// the key never got decided.
func (c eventuallyDecided) stuckAfterSuccess(h *history.History, s scope, idx []int32, evidence func(*history.Attempt) bool, bound int64) (Violation, bool) {
	p, ct := c.cfg.profile(), &c.cfg.contract
	var win *history.Attempt
	for _, i := range idx {
		if a := &h.Attempts[i]; classify(a, p) == succeeded && (win == nil || a.Complete < win.Complete) {
			win = a
		}
	}
	if win == nil {
		return Violation{}, false
	}
	var ops []int64
	var from, to int64 = -1, -1
	for _, i := range idx {
		a := &h.Attempts[i]
		if a.Invoke <= win.Complete || ct.same(a) != ct.same(win) || !evidence(a) {
			continue
		}
		if classify(a, p) == succeeded || a.Outcome != history.OK || a.Status != p.InFlight {
			return Violation{}, false // answered, or not a plain "in flight"
		}
		if from < 0 {
			from = a.Invoke
		}
		to = a.Invoke
		ops = append(ops, a.Op)
	}
	if len(ops) < 2 || to-from < bound {
		return Violation{}, false
	}
	return Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: win.Intent, Ops: append([]int64{win.Op}, ops...),
		Explanation: fmt.Sprintf("%s succeeded at %s (op %d, %d), yet its identical retries since were told %d (in flight) for %s (%s) and never got the replay; a retry must get a definite answer within %s.",
			describeScope(s), at(win.Complete), win.Op, win.Status, p.InFlight, time.Duration(to-from).Round(time.Millisecond), opList(ops), c.cfg.contract.DecisionBound),
		Cause: "the key's record stays 'in progress' after the success: its completion is never written, so every retry is turned away",
	}, true
}

// failureRate is the share of the history's answers that were 5xx, and the
// number of keys that could have shown a run of them by chance.
type failureRate struct {
	p    float64
	keys int
}

func failureRateOf(h *history.History, keys int) failureRate {
	g := Globals{Keys: keys}
	for i := range h.Attempts {
		if a := &h.Attempts[i]; a.Outcome == history.OK {
			g.Answers++
			if a.Status >= 500 {
				g.Failures++
			}
		}
	}
	return g.rate()
}

// unlikely says n identical 5xx in a row are not a chance repetition: with
// independent failures at the observed rate, some key of the history
// would show such a run with probability under 1/1000. At least three.
func unlikely(n int, r failureRate) bool {
	if n < 3 {
		return false
	}
	chance := float64(r.keys)
	for range n - 1 {
		chance *= r.p
	}
	return chance < 1e-3
}

// faultInjected reports whether the history records a fault that can make the
// service (or a hop in front of it) fail.
func faultInjected(h *history.History) bool {
	for _, f := range h.Faults {
		if canFail(f.Kind) {
			return true
		}
	}
	return false
}

// identical5xx reports whether two or more of the ops were answered 5xx
// and every answer among them was the same 5xx, byte for byte, none of it
// under a fault: the service replays a stored error.
func identical5xx(h *history.History, ops []int64) bool {
	want := make(map[int64]bool, len(ops))
	for _, o := range ops {
		want[o] = true
	}
	n := 0
	var first answer
	var spans []span
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if !want[a.Op] || a.Outcome != history.OK {
			continue
		}
		if a.Status < 500 {
			return false
		}
		if spans == nil {
			spans = faultSpans(h)
		}
		if hitByFault(h, a, spans) {
			return false
		}
		if n == 0 {
			first = answerOf(a)
		} else if answerOf(a) != first {
			return false
		}
		n++
	}
	return n >= 2
}
