package checkers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

func init() {
	Register(Registration{Name: "replay-identical", New: ReplayIdentical, Suites: map[string]int{SuiteServer: 2}})
}

// ReplayIdentical returns the checker of "replay-identical": an identical
// retry is answered with the replay. For one (tenant, endpoint, key) and one
// payload (as the contract's fingerprint judges it):
//
//   - every successful response repeats the first success in status, body
//     and the significant headers it carried (every header but
//     [Contract.ReplayIgnore], or only [Contract.ReplayHeaders]);
//   - a retry sent after the first success was received is never rejected
//     instead (the reuse status, 400, 409, 412 or 422: the retry never gets
//     its answer), and never stays "in flight" for good;
//   - a retry is never rejected as a reused key when no other payload was
//     ever sent with the key.
//
// This holds under every status-contract profile.
func ReplayIdentical(opts ...Option) Checker { return replayIdentical{cfg: newConfig(opts)} }

type replayIdentical struct {
	cfg config
	// shared reports whether another scope used a key; set per check.
	shared func(scope) bool
}

var _ Checker = replayIdentical{}

func (replayIdentical) Name() string { return "replay-identical" }

func (c replayIdentical) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c replayIdentical) check(ix *index) Part {
	h := ix.h
	var byKey map[string][]int
	c.shared = func(s scope) bool {
		if byKey == nil {
			order, _ := ix.byScope()
			byKey = scopesByKey(order)
		}
		return len(byKey[s.key]) > 1
	}
	r := Part{Result: Result{Name: c.Name()}}
	order, groups := ix.byScope()
	ct := &c.cfg.contract
	// The first success of each payload is the response every replay of
	// that payload must repeat. Payloads are few per key.
	type payload struct {
		hash  uint64
		first int32 // first success, -1 until one arrives
		seen  int32 // first attempt
		bad   []int32
	}
	var buf [4]payload
	for g := range order.len() {
		s := order.at(g)
		idx := groups.at(g)
		ps := buf[:0]
		var refused *Violation
		for n, i := range idx {
			a := &h.Attempts[i]
			fp := ct.same(a)
			j := 0
			for j < len(ps) && ps[j].hash != fp {
				j++
			}
			if j == len(ps) {
				ps = append(ps, payload{hash: fp, first: -1, seen: i})
				if classify(a, c.cfg.profile()) == succeeded {
					ps[j].first = i
					r.Checked++
				}
				continue
			}
			p := &ps[j]
			if classify(a, c.cfg.profile()) == succeeded {
				r.Checked++
				if p.first < 0 {
					p.first = i
				} else if c.differs(&h.Attempts[p.first], a) != "" {
					p.bad = append(p.bad, i)
				}
				continue
			}
			if a.Outcome == history.OK {
				r.Checked++ // an identical retry that did not succeed
			}
			if refused == nil {
				refused = c.refusedRetry(h, s, idx, n, p.first, p.seen)
			}
		}
		for _, p := range ps {
			if len(p.bad) > 0 {
				r.Violations = append(r.Violations, c.violation(h, ix.effects, s, p.first, p.bad))
			}
		}
		if refused != nil {
			r.Violations = append(r.Violations, *refused)
		}
	}
	r.Violations = append(r.Violations, c.strippedReplays(&r, h, order, groups, r.Violations)...)
	return finish(r, h, "")
}

// strippedReplays catches a replay that lacks a header every first-hand
// success of its endpoint carried, when the first response of its own key
// never reached the client (so the two cannot be compared): a response the
// service marks as a replay (Idempotent-Replayed: true) without the
// Location every 201 it sends has was stored without its headers. At least
// three first-hand successes must agree, and keys already reported are
// left alone. A part of a history checked alone ([WithGlobals]) keeps its
// tallies and candidates in r for [Merge], which judges them together.
func (c replayIdentical) strippedReplays(r *Part, h *history.History, order scopeList, groups scopeGroups, found []Violation) []Violation {
	p := c.cfg.profile()
	tallies := r.t.endpoints
	// Successive attempts nearly always hit the endpoint of the one before.
	var last endpoint
	var t *endpointTally
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if classify(a, p) != succeeded || markedReplay(a) {
			continue
		}
		if tallies == nil {
			tallies = make(map[endpoint]*endpointTally)
		}
		if e := (endpoint{a.Method, a.Path, a.Status}); t == nil || e != last {
			t = tallies[e]
			if t == nil {
				t = &endpointTally{headers: map[string]int{}}
				tallies[e] = t
			}
			last = e
		}
		t.n++
		t.count(a.RespHeaders, &c.cfg.contract)
	}
	for _, t := range tallies {
		t.fold()
	}
	partial := c.cfg.globals != nil
	if partial {
		r.t.endpoints = tallies
	}
	if tallies == nil && !partial {
		return nil // the candidates of a part are judged by the merge
	}
	reported := map[scope]bool{}
	for _, v := range found {
		reported[scope{v.Tenant, v.Method, v.Path, v.Key}] = true
	}
	var out []Violation
	for g := range order.len() {
		s := order.at(g)
		if reported[s] {
			continue
		}
		var cands []*history.Attempt
		for _, i := range groups.at(g) {
			if b := &h.Attempts[i]; classify(b, p) == succeeded && markedReplay(b) {
				cands = append(cands, b)
			}
		}
		if len(cands) == 0 {
			continue
		}
		if partial {
			r.t.stripped = append(r.t.stripped, strippedCandidates{s, cands})
			continue
		}
		if v, bad := strippedReplay(c.Name(), s, cands, tallies); bad {
			out = append(out, v)
		}
	}
	return out
}

// endpoint is where first-hand successes are tallied: their headers say
// what every replay of the endpoint must carry.
type endpoint struct {
	method, path string
	status       int
}

type endpointTally struct {
	n       int
	headers map[string]int
	// sets counts the header-name lists seen, until fold adds them to
	// headers: responses of one endpoint carry the same few lists, so the
	// headers a replay must repeat are worked out once per list.
	sets []nameSet
}

// nameSet is one list of header names and how many responses carried it.
type nameSet struct {
	names    []string // as recorded
	compared []string // the ones a replay must repeat, lower case
	n        int
}

// maxNameSets bounds the lists an endpoint tally keeps apart; past it,
// responses are counted into headers one by one.
const maxNameSets = 16

// count tallies the headers of one first-hand success that a replay must
// repeat.
func (t *endpointTally) count(hs history.Headers, ct *Contract) {
	for k := range t.sets {
		if s := &t.sets[k]; sameNames(s.names, hs) {
			s.n++
			return
		}
	}
	var compared []string
	for _, name := range ct.compared(hs) {
		compared = append(compared, strings.ToLower(name))
	}
	if len(t.sets) == maxNameSets {
		for _, name := range compared {
			t.headers[name]++
		}
		return
	}
	names := make([]string, len(hs))
	for i, f := range hs {
		names[i] = f.Name
	}
	t.sets = append(t.sets, nameSet{names: names, compared: compared, n: 1})
}

// fold adds the counted lists to headers.
func (t *endpointTally) fold() {
	for _, s := range t.sets {
		for _, name := range s.compared {
			t.headers[name] += s.n
		}
	}
	t.sets = nil
}

func sameNames(names []string, hs history.Headers) bool {
	if len(names) != len(hs) {
		return false
	}
	for i, f := range hs {
		if f.Name != names[i] {
			return false
		}
	}
	return true
}

// strippedCandidates are the marked replays of one key not yet reported.
type strippedCandidates struct {
	s     scope
	cands []*history.Attempt
}

// strippedReplay judges the marked replays of one key against the tallies:
// the first that lacks a header all first-hand successes carried.
func strippedReplay(name string, s scope, cands []*history.Attempt, tallies map[endpoint]*endpointTally) (Violation, bool) {
	for _, b := range cands {
		t := tallies[endpoint{b.Method, b.Path, b.Status}]
		if t == nil || t.n < 3 {
			continue
		}
		names := make([]string, 0, len(t.headers))
		for name := range t.headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, hn := range names {
			if t.headers[hn] < t.n {
				continue
			}
			if _, ok := b.RespHeaders.Get(hn); ok {
				continue
			}
			canon := http1Case(hn)
			return Violation{
				Invariant: name, Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent, Ops: []int64{b.Op},
				Explanation: fmt.Sprintf("%s: op %d got a replay (%d, marked replayed) without the %s header that all %d first-hand %d responses of %s %s carried; every replay must repeat the first response with the significant headers it carried.",
					describeScope(s), b.Op, b.Status, canon, t.n, b.Status, b.Method, b.Path),
				Cause: "the replay does not restore the headers of the stored response (only status and body were stored), so a client that lost the first answer loses them",
			}, true
		}
	}
	return Violation{}, false
}

// mergeParts judges the marked replays every part left against the
// first-hand successes of all of them, then settles the whole.
func (c replayIdentical) mergeParts(r Part, parts []Part, h *history.History) Part {
	r.Violations = append(r.Violations, mergeStripped(c.Name(), parts)...)
	return finish(r, h, "")
}

// mergeStripped judges the candidates of every part against the tallies
// of all of them.
func mergeStripped(name string, parts []Part) []Violation {
	tallies := map[endpoint]*endpointTally{}
	for _, p := range parts {
		for e, t := range p.t.endpoints {
			m := tallies[e]
			if m == nil {
				m = &endpointTally{headers: map[string]int{}}
				tallies[e] = m
			}
			m.n += t.n
			for h, n := range t.headers {
				m.headers[h] += n
			}
		}
	}
	var out []Violation
	for _, p := range parts {
		for _, c := range p.t.stripped {
			if v, bad := strippedReplay(name, c.s, c.cands, tallies); bad {
				out = append(out, v)
			}
		}
	}
	return out
}

// markedReplay reports a response the service marked as a replay.
func markedReplay(a *history.Attempt) bool {
	for _, f := range a.RespHeaders {
		// No letter of "replayed" has a non-ASCII case form, so folding
		// the last bytes is what lower-casing the whole name would say.
		if n := len(f.Name); n >= len("replayed") && strings.EqualFold(f.Name[n-len("replayed"):], "replayed") && strings.EqualFold(f.Value, "true") {
			return true
		}
	}
	return false
}

// refusedRetry judges the n-th attempt of a scope, an identical retry that
// did not succeed: first is the first success of its payload (-1 for none),
// seen its payload's first attempt.
func (c replayIdentical) refusedRetry(h *history.History, s scope, idx []int32, n int, first, seen int32) *Violation {
	b := &h.Attempts[idx[n]]
	if b.Outcome != history.OK {
		return nil
	}
	p := c.cfg.profile()
	if refusedRepeat(b, p) {
		return nil // the contract's answer to every repeat (repeat: refuse)
	}
	ct := &c.cfg.contract
	v := &Violation{Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent}
	if first >= 0 && h.Attempts[first].Complete >= 0 && b.Invoke > h.Attempts[first].Complete {
		f := &h.Attempts[first]
		switch {
		case b.Status == p.InFlight:
			// Stuck only if the key never got out of "in flight": a later
			// identical attempt that succeeded shows a passing race.
			for _, i := range idx[n+1:] {
				if a := &h.Attempts[i]; ct.same(a) == ct.same(b) && classify(a, p) == succeeded {
					return nil
				}
			}
			if overlapsOther(h, idx, b) {
				return nil
			}
			v.Ops = []int64{f.Op, b.Op}
			v.Explanation = fmt.Sprintf("%s: op %d succeeded (%d) at %s, yet the identical retry op %d, sent after that, was told %d (in flight) and no later retry got the replay; a decided key must answer an identical retry with the replay.",
				describeScope(s), f.Op, f.Status, at(f.Complete), b.Op, b.Status)
			v.Cause = "the key's record stays 'in progress' after the success: the completion (status and stored response) is never written, so every retry is turned away"
			return v
		case refusal(b.Status, p):
			v.Ops = []int64{f.Op, b.Op}
			v.Explanation = fmt.Sprintf("%s: op %d succeeded (%d) at %s, yet the identical retry op %d, sent after that, was rejected with %d; an identical retry must be answered with the replay, or the client never learns its answer.",
				describeScope(s), f.Op, f.Status, at(f.Complete), b.Op, b.Status)
			v.Cause = c.refusalCause(f, b)
			return v
		}
		return nil
	}
	// No success yet: a retry of a request that may have executed, told
	// that its key was used with another payload although none was sent.
	if b.Status != p.Reuse || idx[n] == seen || otherPayloadBefore(h, idx, b, ct) || c.keyShared(s) {
		return nil // a key another scope used: reuse-rejected judges a global key space
	}
	a := &h.Attempts[seen]
	v.Ops = []int64{a.Op, b.Op}
	v.Explanation = fmt.Sprintf("%s: the retry op %d carried the same payload as op %d (%s) and was rejected with %d, the status of a reused key, although no other payload was ever sent with this key; an identical retry must be answered with the replay.",
		describeScope(s), b.Op, a.Op, statusOf(a), b.Status)
	v.Cause = c.refusalCause(a, b)
	return v
}

// refusal reports a rejection that a decided key must never give an
// identical retry: an idempotency answer, not auth or rate limiting.
func refusal(status int, p Profile) bool {
	switch status {
	case p.Reuse, 400, 409, 412, 422:
		return true
	}
	return p.MissingKey != 0 && status == p.MissingKey
}

func (c replayIdentical) refusalCause(a, b *history.Attempt) string {
	p := c.cfg.profile()
	switch {
	case a.ReqHash != b.ReqHash:
		return "the service fingerprints the raw bytes, while the contract says canonical: the same JSON with another key order or spacing is taken for another payload"
	case b.Status == p.Reuse:
		return "the payload fingerprint includes something the client does not control (a header such as Date or a request id, the attempt number, a timestamp), so an unchanged retry looks like another payload and never gets its answer"
	case b.Status == p.InFlight:
		return "the key's record stays 'in progress' after the success: the completion is never written, so every retry is turned away"
	}
	return "the service rejects a retry of a decided key instead of replaying the stored response"
}

// overlapsOther reports whether another attempt of the scope ran while b did.
func overlapsOther(h *history.History, idx []int32, b *history.Attempt) bool {
	for _, i := range idx {
		if a := &h.Attempts[i]; a.Op != b.Op && overlaps(a, b, h.End) {
			return true
		}
	}
	return false
}

// differs says how b differs from a, or "" when it is a faithful replay.
func (c replayIdentical) differs(a, b *history.Attempt) string {
	if a.Status != b.Status {
		return fmt.Sprintf("status %d instead of %d", b.Status, a.Status)
	}
	if a.RespLen != b.RespLen || a.RespHash != b.RespHash {
		if b.RespLen == 0 {
			return "an empty body instead of " + quoteBody(a)
		}
		return fmt.Sprintf("body %s instead of %s", quoteBody(b), quoteBody(a))
	}
	explicit := c.cfg.contract.ReplayHeaders != nil
	for _, name := range c.cfg.contract.compared(a.RespHeaders) {
		va, oka := a.RespHeaders.Get(name)
		vb, okb := b.RespHeaders.Get(name)
		switch {
		case oka && !okb:
			return fmt.Sprintf("no %s header where the first response had %s: %q", name, name, va)
		case okb && !oka && explicit:
			return fmt.Sprintf("header %s %q where the first response had none", name, vb)
		case va != vb:
			return fmt.Sprintf("header %s %q instead of %q", name, vb, va)
		}
	}
	return ""
}

func (c replayIdentical) violation(h *history.History, effects []history.Effect, s scope, first int32, bad []int32) Violation {
	a, b := &h.Attempts[first], &h.Attempts[bad[0]]
	ops := append([]int64{a.Op}, opsOf(h, bad)...)
	diff := c.differs(a, b)
	v := Violation{
		Invariant: c.Name(), Tenant: s.tenant, Method: s.method, Path: s.path, Key: s.key, Intent: b.Intent, Ops: ops,
		Explanation: fmt.Sprintf("%s: the first success (op %d, %d) was answered differently on replay: op %d got %s; every replay must repeat the first response %s.",
			describeScope(s), a.Op, a.Status, b.Op, diff, map[bool]string{true: "byte for byte", false: "with the significant headers it carried"}[!strings.Contains(diff, "header")]),
	}
	switch {
	case b.RespLen == 0 && a.RespLen > 0:
		v.Cause = "the replay returns an empty body: the first response was not stored, so a client that lost it never learns the order id (empty replay)"
	case strings.HasPrefix(diff, "body") && executedTwice(effects, s):
		v.Cause = "the retry was executed a second time and its own response returned: the lookup missed the stored record, so this is no replay at all"
	case strings.HasPrefix(diff, "body"):
		v.Cause = "the replay rebuilt the response instead of returning the stored bytes (ids or timestamps regenerated on replay)"
	case strings.HasPrefix(diff, "no "):
		v.Cause = "the replay does not restore the headers of the stored response (only status and body were stored), so a client that lost the first answer loses them"
	case strings.HasPrefix(diff, "header"):
		v.Cause = "the replay does not restore the stored headers"
	default:
		v.Cause = "the replay does not restore the stored status"
	}
	return v
}

// executedTwice reports an effect kind the scope's (tenant, key) produced
// more than once.
func executedTwice(effects []history.Effect, s scope) bool {
	if s.key == "" {
		return false
	}
	return duplicatedKeys(effects, map[tenantKey]bool{{s.tenant, s.key}: true})[tenantKey{s.tenant, s.key}] != ""
}

func (c replayIdentical) keyShared(s scope) bool { return c.shared != nil && c.shared(s) }

// http1Case writes a header name the way HTTP/1.1 servers usually do:
// "location" → "Location", "x-request-id" → "X-Request-Id".
func http1Case(name string) string {
	b := []byte(name)
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}
