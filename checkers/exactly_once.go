package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/history"
)

// Started first: it builds the groups and the attribution the other
// checks wait for.
func init() {
	Register(Registration{Name: "exactly-once", New: ExactlyOnce, Suites: map[string]int{SuiteServer: 1, SuiteClient: 10}, Start: 1})
}

// ExactlyOnce returns the checker of "exactly-once": an intent with an
// acknowledged success has exactly one effect of each kind; one with only
// indeterminate attempts has zero or one; one with only definite rejections
// has none. A duplicate (two or more) and a lost effect (acknowledged, none)
// are both violations.
func ExactlyOnce(opts ...Option) Checker { return exactlyOnce{newConfig(opts)} }

type exactlyOnce struct{ cfg config }

var _ Checker = exactlyOnce{}

func (exactlyOnce) Name() string { return "exactly-once" }

func (c exactlyOnce) Check(h *history.History, effects []history.Effect) Result {
	return c.check(newIndex(h, effects)).Result
}

func (c exactlyOnce) check(ix *index) Part {
	h, effects := ix.h, ix.effects
	r := Part{Result: Result{Name: c.Name()}}
	unread := h.Meta.EffectsUnread
	if !h.EffectsKnown && len(effects) == 0 {
		why := "the history records no effects (no effect events, and the meta event does not set effects_recorded), so nothing can be said about how many times anything executed"
		if unread {
			why = "the producer did not read the system's effects (effects_recorded: false), so nothing can be said about how many times anything executed"
		}
		r.t.early = why
		return finish(r, h, why)
	}
	if h.Client() {
		return c.checkClient(ix, r)
	}
	at := ix.attribution(&c.cfg.contract)
	var bodies map[bodyScope][]*intentState
	for gi := range at.groups {
		g := &at.groups[gi]
		r.Checked += int(g.nUn)
		if g.nUn == 1 {
			if v, bad := c.judgeUnit(h, effects, &at.units[at.unitsOf(g)[0]], at.effectsOf(g), unread, &bodies, at, &r.twins); bad {
				r.Violations = append(r.Violations, v)
			}
			continue
		}
		if bodies == nil {
			bodies = indexBodies(h, at)
		}
		r.Violations = append(r.Violations, c.judgeGroup(h, effects, at, g, unread, bodies, &r.twins)...)
	}
	r.t.orphans, r.t.unread = at.orphans, unread
	if p := c.cfg.profile(); p.Refuse != 0 {
		r.t.unlearned, r.t.refuse = unlearned(h, at, p), p.Refuse
	}
	return settleExactlyOnce(r, h)
}

// unlearned counts the units of a service that refuses every repeat
// that executed (an effect) without any success reaching the client, a
// refusal answering its retries: the lost-answer cost of that contract.
func unlearned(h *history.History, at *attribution, p Profile) int {
	n := 0
	for ui := range at.units {
		u := &at.units[ui]
		if u.acked >= 0 || !at.executed(u) {
			continue
		}
		refused := false
		for _, s := range at.intentsOf(u) {
			for _, i := range at.attemptsOf(&at.intents[s]) {
				refused = refused || refusedRepeat(&h.Attempts[i], p)
			}
		}
		if refused {
			n++
		}
	}
	return n
}

// settleExactlyOnce gives the verdict and reason from the violations and
// the tally: the end of a check, and of a merge of checked parts.
func settleExactlyOnce(r Part, h *history.History) Part {
	var notes []string
	if n := r.t.orphans; n > 0 {
		notes = append(notes, fmt.Sprintf("%s matched no attempt in the history and %s not judged", countOf(n, ""), plural(n, "was", "were")))
	}
	if n := r.t.unlearned; n > 0 {
		// The lost-answer cost of a contract that refuses every repeat.
		notes = append(notes, fmt.Sprintf("%d %s but %s lost, and the service refuses every repeat (%d): the client never learns its order",
			n, plural(n, "intent executed", "intents executed"), plural(n, "its answer was", "their answers were"), r.t.refuse))
	}
	unknown := ""
	if r.t.unread {
		unknown = "the producer did not read all of the system's effects (effects_recorded: false): duplicates were judged, lost effects cannot be"
		if len(r.Violations) > 0 {
			notes = append(notes, unknown)
		}
	}
	r.Reason = strings.Join(notes, "; ")
	return finish(r, h, unknown)
}

// mergeParts settles the whole from its parts: an early unknown stands as
// it is, else the orphans and unread effects the parts counted.
func (exactlyOnce) mergeParts(r Part, _ []Part, h *history.History) Part {
	switch {
	case r.t.early != "":
		return finish(r, h, r.t.early)
	case r.t.client:
		return settleClientExactlyOnce(r, h)
	}
	return settleExactlyOnce(r, h)
}

// judgeUnit judges a group of one unit: every effect the group has is its.
func (c exactlyOnce) judgeUnit(h *history.History, effects []history.Effect, u *unit, fx []int32, unread bool, bodies *map[bodyScope][]*intentState, at *attribution, asks *[]twinAsk) (Violation, bool) {
	st := at.firstOf(u)
	if u.acked >= 0 {
		st = at.ackedOf(u)
	}
	if len(fx) >= 2 { // fewer cannot be a duplicate
		kinds := groupKinds(effects, fx)
		var dup []kindEffects
		for _, k := range kinds {
			if len(k.idx) >= 2 {
				dup = append(dup, k)
			}
		}
		if len(dup) > 0 {
			return c.duplicate(h, effects, at, u, st, kinds, dup), true
		}
	}
	first := &h.Attempts[st.first]
	switch {
	case u.acked >= 0 && len(fx) == 0 && !unread && !poisoned(h, unitAttempts(at, u)):
		if *bodies == nil {
			*bodies = indexBodies(h, at)
		}
		return c.lost(h, at, st, *bodies, asks), true
	case u.acked < 0 && !at.indet(u) && len(fx) > 0:
		return Violation{
			Invariant: c.Name(), Tenant: first.Tenant, Method: first.Method, Path: first.Path, Key: first.Key, Intent: st.id(h),
			Ops: opsOf(h, unitAttempts(at, u)),
			Explanation: fmt.Sprintf("%s was never acknowledged (answers: %s) yet produced %s; a request that was only ever rejected must have no effect.",
				describeIntent(h, st), answers(h, unitAttempts(at, u)), effectList(effects, fx)),
			Cause: "the service executed the request and then answered with a rejection: the rejection is decided after the business write, or an error after the commit is reported as a failure",
		}, true
	}
	return Violation{}, false
}

// judgeGroup judges several units that share a (tenant, key): effects that
// name an intent are judged per unit; the ones that name only the key are
// counted against what the units together may have produced, and a
// shortfall or an excess is reported for the group, never pinned on one
// intent the evidence cannot single out.
func (c exactlyOnce) judgeGroup(h *history.History, effects []history.Effect, at *attribution, g *group, unread bool, bodies map[bodyScope][]*intentState, asks *[]twinAsk) []Violation {
	var out []Violation
	units := at.unitsOf(g)
	for _, ui := range units {
		u := &at.units[ui]
		if u.nEx >= 2 {
			kinds := groupKinds(effects, at.exactOf(u))
			var dup []kindEffects
			for _, k := range kinds {
				if len(k.idx) >= 2 {
					dup = append(dup, k)
				}
			}
			if len(dup) > 0 {
				st := at.firstOf(u)
				if u.acked >= 0 {
					st = at.ackedOf(u)
				}
				out = append(out, c.duplicate(h, effects, at, u, st, kinds, dup))
			}
		}
	}
	// Per kind, how many pooled effects the units without an exact one of
	// that kind can absorb: one each if acknowledged or maybe executed.
	pool := groupKinds(effects, g.pool())
	need := 0 // acknowledged units with no exact effect at all
	for _, ui := range units {
		if u := &at.units[ui]; u.acked >= 0 && u.nEx == 0 && !poisoned(h, unitAttempts(at, u)) {
			need++
		}
	}
	most := 0
	for _, k := range pool {
		most = max(most, len(k.idx))
		room := 0
		for _, ui := range units {
			if u := &at.units[ui]; (u.acked >= 0 || at.indet(u)) && !hasKind(effects, at.exactOf(u), k.kind) {
				room++
			}
		}
		if len(k.idx) > room {
			out = append(out, c.groupExcess(h, effects, at, g, k, room))
		}
	}
	switch {
	case unread || need <= most:
	case most == 0:
		// No effect names only the key: each acknowledged unit without an
		// effect of its own is certainly the one that lacks it.
		for _, ui := range units {
			if u := &at.units[ui]; u.acked >= 0 && u.nEx == 0 && !poisoned(h, unitAttempts(at, u)) {
				out = append(out, c.lost(h, at, at.ackedOf(u), bodies, asks))
			}
		}
	default:
		out = append(out, c.groupShortfall(h, at, g, need, most, pool))
	}
	return out
}

func hasKind(effects []history.Effect, idx []int32, kind string) bool {
	for _, i := range idx {
		if effects[i].Kind == kind {
			return true
		}
	}
	return false
}

func (c exactlyOnce) groupExcess(h *history.History, effects []history.Effect, at *attribution, g *group, k kindEffects, room int) Violation {
	v := c.groupViolation(h, at, g)
	v.Explanation = fmt.Sprintf("%s: %s %s between them, which name no intent, where at most %d could have executed; each request may execute once.",
		describeGroup(h, at, g), countOf(len(k.idx), k.kind), "("+effectList(effects, k.idx)+")", room)
	st := at.firstOf(&at.units[at.unitsOf(g)[0]])
	all := unitAttemptsOf(at, g)
	retried := false
	for _, ui := range at.unitsOf(g) {
		for _, s := range at.intentsOf(&at.units[ui]) {
			retried = retried || at.intents[s].nAtt > 1
		}
	}
	if retried {
		v.Cause = c.duplicateCause(h, effects, all, st, []kindEffects{k}, []kindEffects{k})
	} else {
		v.Cause = "no request was retried, so one request's write was applied more than once (a retried transaction or a redelivered job that is not idempotent), or effects are written without a request"
	}
	return v
}

func (c exactlyOnce) groupShortfall(h *history.History, at *attribution, g *group, need, found int, pool []kindEffects) Violation {
	v := c.groupViolation(h, at, g)
	var acked []string
	for _, ui := range at.unitsOf(g) {
		if u := &at.units[ui]; u.acked >= 0 && u.nEx == 0 {
			st := at.ackedOf(u)
			a := &h.Attempts[st.acked]
			acked = append(acked, fmt.Sprintf("%s (%d, op %d)", st.id(h), a.Status, a.Op))
		}
	}
	what := "no effect"
	if found > 0 {
		what = fmt.Sprintf("only %s", countOf(found, pool[0].kind))
	}
	v.Explanation = fmt.Sprintf("%s: %d requests were acknowledged (%s) but the key has %s; each acknowledged request must have its effect (which one lacks it cannot be told: the effects name no intent).",
		describeGroup(h, at, g), need, strings.Join(acked, ", "), what)
	v.Cause = "an acknowledged request was not executed: the success was not backed by a committed write, or another request's response was replayed to it"
	return v
}

func (c exactlyOnce) groupViolation(h *history.History, at *attribution, g *group) Violation {
	a := &h.Attempts[at.firstOf(&at.units[at.unitsOf(g)[0]]).first]
	return Violation{Invariant: c.Name(), Tenant: a.Tenant, Method: a.Method, Path: a.Path, Key: a.Key, Ops: opsOf(h, unitAttemptsOf(at, g))}
}

// describeGroup names a group: "key k-1, tenant t1, POST /v1/orders (intents i2 and i3)".
func describeGroup(h *history.History, at *attribution, g *group) string {
	a := &h.Attempts[at.firstOf(&at.units[at.unitsOf(g)[0]]).first]
	var ids []string
	for _, ui := range at.unitsOf(g) {
		for _, s := range at.intentsOf(&at.units[ui]) {
			if st := &at.intents[s]; !strings.HasPrefix(st.id(h), "key:") {
				ids = append(ids, st.id(h))
			}
		}
	}
	s := describeScope(scopeOf(a))
	if len(ids) > 0 {
		s += " (intents " + joinWords(ids) + ")"
	}
	return s
}

func joinWords(w []string) string {
	if len(w) <= 1 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

func unitAttempts(at *attribution, u *unit) []int32 {
	var out []int32
	for _, s := range at.intentsOf(u) {
		out = append(out, at.attemptsOf(&at.intents[s])...)
	}
	slices.Sort(out)
	return out
}

func unitAttemptsOf(at *attribution, g *group) []int32 {
	var out []int32
	for _, ui := range at.unitsOf(g) {
		out = append(out, unitAttempts(at, &at.units[ui])...)
	}
	slices.Sort(out)
	return out
}

type kindEffects struct {
	kind string
	idx  []int32
}

func groupKinds(effects []history.Effect, idx []int32) []kindEffects {
	var out []kindEffects
	for _, i := range idx {
		k := effects[i].Kind
		found := false
		for j := range out {
			if out[j].kind == k {
				out[j].idx = append(out[j].idx, i)
				found = true
				break
			}
		}
		if !found {
			out = append(out, kindEffects{kind: k, idx: []int32{i}})
		}
	}
	return out
}

func (c exactlyOnce) duplicate(h *history.History, effects []history.Effect, at *attribution, u *unit, st *intentState, kinds, dup []kindEffects) Violation {
	first := &h.Attempts[st.first]
	// Name every duplicated kind: "2 order effects (…) and 2 ledger effects (…)".
	parts := make([]string, len(dup))
	for i, d := range dup {
		parts[i] = fmt.Sprintf("%s (%s)", countOf(len(d.idx), d.kind), effectList(effects, d.idx))
	}
	what := joinWords(parts)
	idx := unitAttempts(at, u)
	who := describeIntent(h, st)
	if u.nIn > 1 {
		var ids []string
		for _, s := range at.intentsOf(u) {
			ids = append(ids, at.intents[s].id(h))
		}
		who = fmt.Sprintf("%s, one request to the service (intents %s share its key and payload),", describeScope(scopeOf(first)), joinWords(ids))
	}
	v := Violation{
		Invariant: c.Name(), Tenant: first.Tenant, Method: first.Method, Path: first.Path, Key: first.Key, Intent: st.id(h),
		Ops: opsOf(h, idx),
		Explanation: fmt.Sprintf("%s produced %s; exactly one of each was expected. The intent sent %s.",
			who, what, opList(opsOf(h, idx))),
	}
	v.Cause = c.duplicateCause(h, effects, idx, st, kinds, dup)
	return v
}

func (c exactlyOnce) duplicateCause(h *history.History, effects []history.Effect, attempts []int32, st *intentState, kinds, dup []kindEffects) string {
	// Keys of the intent's own endpoint: a callback or a follow-up request
	// to another endpoint is not a retry with a new key.
	first := &h.Attempts[st.first]
	keys := map[string]bool{}
	for _, i := range attempts {
		if a := &h.Attempts[i]; a.Key != "" && a.Method == first.Method && a.Path == first.Path {
			keys[a.Key] = true
		}
	}
	if len(dup) < len(kinds) {
		return fmt.Sprintf("only the %s effect is duplicated while the request itself executed once: a redelivered message or callback was applied again — the consumer or callback handler does not deduplicate (by event id or provider transaction)", dup[0].kind)
	}
	if len(keys) >= 2 {
		return "the key was regenerated for each retry, so the service saw every attempt as a new intent; generate the key once, before the retry loop"
	}
	if first.Key == "" {
		return "the requests carried no idempotency key, so nothing could tell the duplicates apart"
	}
	// A purge between the intent's attempts explains one more execution,
	// even when the retries after it came as an overlapping burst.
	if purgedBetween(h, attempts) && maxKind(dup) == 2 {
		return "the retries after the purge executed again: the idempotency record was purged before the client's retry window ended (retention shorter than the retry window)"
	}
	// Overlapping duplicates both executed only if some run of mutually
	// overlapping attempts produced more than one effect: with no more
	// effects than such runs, one execution per run explains them all,
	// and the later runs came after the earlier had finished.
	if runs, overlapped := clusters(h, attempts); overlapped && maxKind(dup) > runs {
		return "overlapping duplicates both executed: the claim is not atomic (check-then-insert, execute-then-record, or a 'processing' record treated as absent) — claim with a unique-index insert before the business write"
	}
	// A timed-out attempt's work may have gone on after the client gave
	// up, until the run saw the service quiesce (a settled event): a
	// second execution inside that time ran beside the first.
	if runs, overlapped := openClusters(h, attempts); overlapped && maxKind(dup) > runs {
		return "a second execution overlapped a timed-out attempt that was still running on the server: the claim was not held across instances (or not atomic) — the retry, on another instance or just later, did not see the first attempt's claim"
	}
	if firstOwn5xx(h, attempts, first) {
		return "the first attempt did its work but answered 5xx: the error was not stored and the retry redid work that had already happened — record the outcome (or undo the work) before answering an error"
	}
	if faulted(h, "retention-expiry") || maxGap(h, attempts) >= int64(c.cfg.contract.RetentionGap) {
		return "a retry after a long gap executed again: the idempotency record was purged before the client's retry window ended (retention shorter than the retry window)"
	}
	if faulted(h, "replica-lag") {
		return "a sequential retry did not see the first execution: the idempotency lookup read a lagging replica instead of the primary"
	}
	if acrossSteps(h, attempts) {
		return "a retry sent after a pause (in a later step) executed again: the idempotency record was gone by then (retention shorter than the retry window), or was never kept"
	}
	// No gap and no purge: retention is not what the evidence supports.
	return "a retry sent after the first execution had finished did not see it: the record was not written (or not committed) before the response, or the service ignores the key"
}

// firstOwn5xx reports whether the intent's first attempt to its endpoint
// was answered 5xx by the service itself (no fault hit it or was in force).
func firstOwn5xx(h *history.History, attempts []int32, first *history.Attempt) bool {
	var a *history.Attempt
	for _, i := range attempts {
		if b := &h.Attempts[i]; b.Method == first.Method && b.Path == first.Path && (a == nil || b.Invoke < a.Invoke) {
			a = b
		}
	}
	if a == nil || a.Outcome != history.OK || a.Status < 500 {
		return false
	}
	return !hitByFault(h, a, faultSpans(h))
}

// bodyScope groups intents that sent byte-identical requests to one
// endpoint: the scope a twin is asked about, inside a check as across
// partitions ([TwinScope]).
type bodyScope = TwinScope

func indexBodies(h *history.History, at *attribution) map[bodyScope][]*intentState {
	m := make(map[bodyScope][]*intentState)
	for si := range at.intents {
		st := &at.intents[si]
		a := &h.Attempts[st.first]
		k := bodyScope{a.Tenant, a.Method, a.Path, a.ReqHash}
		m[k] = append(m[k], st)
	}
	return m
}

func twinCause(intent string) string {
	return fmt.Sprintf("intent %s sent a byte-identical body and did execute: the service deduplicates by request body instead of by key, and swallowed a second legitimate intent", intent)
}

// lost reports a unit acknowledged without an effect. In a part of a
// history it asks the merge, through asks, for a twin the other parts may
// hold.
func (c exactlyOnce) lost(h *history.History, attr *attribution, st *intentState, bodies map[bodyScope][]*intentState, asks *[]twinAsk) Violation {
	ack := &h.Attempts[st.acked]
	v := Violation{
		Invariant: c.Name(), Tenant: ack.Tenant, Method: ack.Method, Path: ack.Path, Key: ack.Key, Intent: st.id(h),
		Ops: opsOf(h, attr.attemptsOf(st)),
		Explanation: fmt.Sprintf("%s was acknowledged with %d (op %d) but produced no effect; exactly one was expected.",
			describeIntent(h, st), ack.Status, ack.Op),
	}
	if c.cfg.globals != nil {
		// A part of a history: the twin may be under a key of another
		// part, so the merge looks for it ([ResolveTwins]); the cause
		// below stands when there is none.
		*asks = append(*asks, twinAsk{idOf(&v), twinQuery{bodyScope{ack.Tenant, ack.Method, ack.Path, ack.ReqHash}, attr.firstOf(attr.unitOf(st)).id(h)}})
	} else {
		for _, other := range bodies[bodyScope{ack.Tenant, ack.Method, ack.Path, ack.ReqHash}] {
			if other.unit != st.unit && attr.executed(attr.unitOf(other)) {
				v.Cause = twinCause(other.id(h))
				return v
			}
		}
	}
	for _, f := range h.Faults {
		if f.Kind == "crash" && f.Action == "fire" && f.NS > ack.Complete {
			v.Cause = fmt.Sprintf("the service answered before it committed, and the crash at %s lost the write (commit after response)", at(f.NS))
			return v
		}
	}
	v.Cause = "the success response was not backed by a committed write, or was another request's response replayed to this one"
	return v
}

func describeIntent(h *history.History, st *intentState) string {
	a := &h.Attempts[st.first]
	s := describeScope(scopeOf(a))
	if a.Key == "" {
		s = strings.Replace(s, "key ", "no key", 1)
	}
	if strings.HasPrefix(st.id(h), "key:") {
		return "the intent of " + s
	}
	return fmt.Sprintf("intent %s (%s)", st.id(h), s)
}

func effectList(effects []history.Effect, idx []int32) string {
	parts := make([]string, 0, len(idx))
	for i, j := range idx {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("… %d in all", len(idx)))
			break
		}
		parts = append(parts, effects[j].ID)
	}
	return strings.Join(parts, ", ")
}

func answers(h *history.History, idx []int32) string {
	parts := make([]string, len(idx))
	for i, j := range idx {
		parts[i] = statusOf(&h.Attempts[j])
	}
	return strings.Join(parts, ", ")
}

func faulted(h *history.History, kind string) bool {
	for _, f := range h.Faults {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// maxGap is the longest pause between one attempt's end and the next's start.
func maxGap(h *history.History, idx []int32) int64 {
	var gap int64
	for i := 1; i < len(idx); i++ {
		prev, cur := &h.Attempts[idx[i-1]], &h.Attempts[idx[i]]
		if g := cur.Invoke - prev.End(h.End); g > gap {
			gap = g
		}
	}
	return gap
}

// purgedBetween reports a retention-expiry fault fired after the first of
// the attempts was sent and before the last was.
func purgedBetween(h *history.History, attempts []int32) bool {
	if len(attempts) < 2 {
		return false
	}
	from, to := h.Attempts[attempts[0]].Invoke, h.Attempts[attempts[0]].Invoke
	for _, i := range attempts {
		to = max(to, h.Attempts[i].Invoke)
	}
	for _, f := range h.Faults {
		if f.Kind == "retention-expiry" && f.Action == "fire" && f.NS > from && f.NS < to {
			return true
		}
	}
	return false
}

func maxKind(dup []kindEffects) int {
	n := 0
	for _, d := range dup {
		n = max(n, len(d.idx))
	}
	return n
}

// clusters counts the runs of overlapping attempts (attempts sorted by
// invoke; a run ends where the next attempt starts after every attempt of
// the run has ended), and says whether any run holds two or more.
func clusters(h *history.History, attempts []int32) (int, bool) {
	return clustersBy(h, attempts, func(a *history.Attempt) int64 { return a.End(h.End) })
}

// openClusters is [clusters] with each timed-out attempt held open until
// the service quiesced ([history.History.OpenUntil]).
func openClusters(h *history.History, attempts []int32) (int, bool) {
	if len(h.Settled) == 0 {
		return clusters(h, attempts)
	}
	return clustersBy(h, attempts, h.OpenUntil)
}

func clustersBy(h *history.History, attempts []int32, endOf func(*history.Attempt) int64) (int, bool) {
	idx := slices.Clone(attempts)
	slices.SortFunc(idx, func(x, y int32) int { return cmp.Compare(h.Attempts[x].Invoke, h.Attempts[y].Invoke) })
	n, end, multi := 0, int64(-1), false
	for _, i := range idx {
		a := &h.Attempts[i]
		if n == 0 || a.Invoke >= end {
			n++
			end = endOf(a)
			continue
		}
		multi = true
		end = max(end, endOf(a))
	}
	return n, multi
}

// acrossSteps reports whether the attempts were sent in more than one step
// of the run: the later ones came after a pause the scenario made (a
// resend step, its wait), which is the gap a purged record shows in.
func acrossSteps(h *history.History, attempts []int32) bool {
	if len(h.Steps) < 2 || len(attempts) < 2 {
		return false
	}
	stepOf := func(i int32) int {
		n := 0
		for k, st := range h.Steps {
			if int(i) >= st.Attempts {
				n = k
			}
		}
		return n
	}
	first := stepOf(attempts[0])
	for _, i := range attempts[1:] {
		if stepOf(i) != first {
			return true
		}
	}
	return false
}
