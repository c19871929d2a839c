package checkers

import (
	"slices"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/unionfind"
)

// intentState is what one intent did and produced.
//
// A history holds hundreds of thousands of intents, units and groups, so
// their records are kept small: no slice headers and no pointers, only
// indices into the attribution's shared arrays (a unit of slices and
// pointers took 64 bytes, this one 24). An intent's id is its first
// attempt's, and the effects attributed to it are kept only on its unit.
type intentState struct {
	first     int32 // its first attempt
	att, nAtt int32 // its attempts: attribution.attempts[att:att+nAtt], in history order
	acked     int32 // first attempt with a 2xx, or -1
	unit      int32 // its unit, in attribution.units
	anyIndet  bool  // some attempt may have executed unseen
}

// unit is what the service must treat as one request: one intent, or
// several intents it cannot tell apart because they share a key and a
// payload (or one was answered with the other's stored response). A unit
// that was acknowledged must have one effect; one that may have executed,
// at most one; one only ever rejected, none.
type unit struct {
	in, nIn int32 // its intents: attribution.members[in:in+nIn]
	acked   int32 // the first acknowledged intent, or -1
	ex, nEx int32 // effects attributed exactly to one of its intents: attribution.exact[ex:ex+nEx]
	group   int32
}

// id returns the intent's id.
func (st *intentState) id(h *history.History) string { return h.Attempts[st.first].Intent }

// group is a set of units joined by the (tenant, key)s they used: the
// effects that name only a (tenant, key) ([history.Effect] without a
// known intent) are shared by the group, and only their count can be
// judged when the group holds more than one unit.
type group struct {
	un, nUn int32    // its units: attribution.unitsOf[un:un+nUn]
	shared  *[]int32 // effects attributed by (tenant, key) only; a pointer, as most groups have none
}

// pool returns the effects attributed to the group by (tenant, key) only.
func (g *group) pool() []int32 {
	if g.shared == nil {
		return nil
	}
	return *g.shared
}

// attribution joins effects to intents.
type attribution struct {
	intents []intentState // in order of first attempt
	units   []unit        // in order of first intent
	groups  []group       // in order of first attempt
	orphans int           // effects no attempt of the history explains

	// The lists of the records above, each laid out in one array.
	attempts, members, unitList, exact []int32
}

// attemptsOf returns the attempts of an intent, in history order.
func (at *attribution) attemptsOf(st *intentState) []int32 {
	return at.attempts[st.att : st.att+st.nAtt : st.att+st.nAtt]
}

// intentsOf returns the intents of a unit (indices into at.intents).
func (at *attribution) intentsOf(u *unit) []int32 { return at.members[u.in : u.in+u.nIn : u.in+u.nIn] }

// firstOf returns a unit's first intent.
func (at *attribution) firstOf(u *unit) *intentState { return &at.intents[at.members[u.in]] }

// ackedOf returns a unit's first acknowledged intent, or nil.
func (at *attribution) ackedOf(u *unit) *intentState {
	if u.acked < 0 {
		return nil
	}
	return &at.intents[u.acked]
}

// exactOf returns the effects attributed exactly to a unit's intents.
func (at *attribution) exactOf(u *unit) []int32 { return at.exact[u.ex : u.ex+u.nEx : u.ex+u.nEx] }

// unitsOf returns the units of a group (indices into at.units).
func (at *attribution) unitsOf(g *group) []int32 {
	return at.unitList[g.un : g.un+g.nUn : g.un+g.nUn]
}

// unitOf returns an intent's unit.
func (at *attribution) unitOf(st *intentState) *unit { return &at.units[st.unit] }

// groupOf returns a unit's group.
func (at *attribution) groupOf(u *unit) *group { return &at.groups[u.group] }

// indet reports whether some attempt of the unit may have executed unseen.
func (at *attribution) indet(u *unit) bool {
	for _, s := range at.intentsOf(u) {
		if at.intents[s].anyIndet {
			return true
		}
	}
	return false
}

// executed reports whether the unit has an effect that is surely its own.
func (at *attribution) executed(u *unit) bool {
	g := at.groupOf(u)
	return u.nEx > 0 || (g.nUn == 1 && len(g.pool()) > 0)
}

type tenantKey struct{ tenant, key string }

// attribute assigns every effect: to one intent when the effect names it,
// else to the group of the intents that used its (tenant, key). Intents
// that share a key and a payload, or whose acknowledgment is byte for byte
// the other's, are one unit: a correct service executes them once.
//
// It costs one pass over the attempts besides the intents [index.byIntent]
// grouped (one lookup per attempt, shared with the report) and one lookup
// per effect; the joins are found through the scopes [index.byScope]
// already grouped, and
// the (tenant, key) map that joins intents across endpoints and requests
// without a key is built only when some effect names no known intent.
func attribute(ix *index, p Profile, ct *Contract) *attribution {
	h, effects := ix.h, ix.effects
	order, scopeGroups := ix.byScope()
	ig := ix.byIntent()
	byID, attemptOf := ig.table, ig.of
	states := make([]intentState, len(ig.first))
	for s, first := range ig.first {
		states[s] = intentState{first: first, acked: -1, att: ig.off[s], nAtt: ig.off[s+1] - ig.off[s]}
	}
	var id string
	isID := func(s int32) bool { return h.Attempts[states[s].first].Intent == id }
	for i := range h.Attempts {
		switch classify(&h.Attempts[i], p) {
		case succeeded:
			if st := &states[attemptOf[i]]; st.acked < 0 {
				st.acked = int32(i)
			}
		case indeterminate:
			states[attemptOf[i]].anyIndet = true
		}
	}
	at := &attribution{intents: states, attempts: ig.flat}
	// Scratch for the bucketing below; the index's own arrays are shared.
	start := make([]int32, len(states)+1)

	// Units and groups: two union-finds over the intents. Only a scope
	// used by several intents joins anything.
	unitOf, groupOf := newUnionFind(len(states)), newUnionFind(len(states))
	for g := range order.len() {
		idx := scopeGroups.at(g)
		s0 := attemptOf[idx[0]]
		multi := false
		for _, i := range idx[1:] {
			if attemptOf[i] != s0 {
				multi = true
				break
			}
		}
		if multi {
			joinScope(h, idx, attemptOf, unitOf, groupOf, p, ct)
		}
	}
	// Effects that name a known intent go to it; the map of (tenant, key)
	// is built only when some effect names none.
	// Effects are mostly read back in the order the intents ran: the
	// intent after the last one matched is tried before the map (intent
	// ids are unique among states, so a match is the map's answer).
	effectOf := make([]int32, len(effects))
	named := true
	next := int32(0)
	for i := range effects {
		effectOf[i] = -1
		if e := &effects[i]; e.Intent != "" {
			if int(next) < len(states) && h.Attempts[states[next].first].Intent == e.Intent {
				effectOf[i] = next
				next++
				continue
			}
			id = e.Intent
			if s, ok := byID.get(id, isID); ok {
				effectOf[i], next = s, s+1
				continue
			}
		}
		named = false
	}
	byKey := map[tenantKey]int32(nil)
	if !named {
		// Some effect names only its (tenant, key): join every intent that
		// used one, whatever the endpoint, keyless ones included.
		byKey = make(map[tenantKey]int32, len(states))
		for j := range h.Attempts {
			a := &h.Attempts[j]
			tk := tenantKey{a.Tenant, a.Key}
			if f, ok := byKey[tk]; ok {
				groupOf.Join(f, attemptOf[j])
			} else {
				byKey[tk] = attemptOf[j]
			}
		}
	}

	// Number the units and groups in order of first intent, then lay their
	// member lists out in flat arrays (no allocation per unit).
	unitNo := make([]int32, len(states)) // unit of each intent
	groupNo := make([]int32, 0, len(states))
	rootUnit := start[:len(states)] // reused: unit number of each root + 1
	clear(rootUnit)
	rootGroup := make([]int32, len(states)) // group number of each root + 1
	nGroups := 0
	for s := range states {
		ur := unitOf.Find(int32(s))
		if rootUnit[ur] == 0 {
			gr := groupOf.Find(int32(s))
			if rootGroup[gr] == 0 {
				nGroups++
				rootGroup[gr] = int32(nGroups)
			}
			groupNo = append(groupNo, rootGroup[gr]-1) // the group of unit len(groupNo)
			rootUnit[ur] = int32(len(groupNo))
		}
		unitNo[s] = rootUnit[ur] - 1
	}
	units := make([]unit, len(groupNo))
	groups := make([]group, nGroups)
	at.members, start = bucket(unitNo, len(units), rootUnit[:0])
	for u := range units {
		units[u] = unit{in: start[u], nIn: start[u+1] - start[u], acked: -1, group: groupNo[u]}
	}
	at.unitList, start = bucket(groupNo, nGroups, start[:0])
	for g := range groups {
		groups[g] = group{un: start[g], nUn: start[g+1] - start[g]}
	}
	for s := range states {
		st := &states[s]
		u := &units[unitNo[s]]
		st.unit = unitNo[s]
		if st.acked >= 0 && (u.acked < 0 || h.Attempts[st.acked].Complete < h.Attempts[states[u.acked].acked].Complete) {
			u.acked = int32(s)
		}
	}
	at.units, at.groups = units, groups

	for i := range effects {
		e := &effects[i]
		if effectOf[i] >= 0 {
			continue
		}
		s, ok := byKey[tenantKey{e.Tenant, e.Key}]
		if !ok {
			at.orphans++
			continue
		}
		g := &groups[units[states[s].unit].group]
		if g.shared == nil {
			g.shared = new([]int32)
		}
		*g.shared = append(*g.shared, int32(i))
	}
	// The effects of a unit's intents, in effect order.
	for i, s := range effectOf {
		if s >= 0 {
			effectOf[i] = unitNo[s]
		}
	}
	at.exact, start = bucket(effectOf, len(units), start[:0])
	for u := range units {
		units[u].ex, units[u].nEx = start[u], start[u+1]-start[u]
	}
	return at
}

// joinScope joins the intents of one scope used by several: all into one
// group, and into one unit those with the same payload or the same
// acknowledgment (a replay). Scopes with many intents are rare and small.
func joinScope(h *history.History, idx []int32, attemptOf []int32, unitOf, groupOf unionFind, p Profile, ct *Contract) {
	type first struct {
		fp uint64
		s  int32
	}
	var payloads, acks []first
	var ackAns []answer
	for _, i := range idx {
		a, s := &h.Attempts[i], attemptOf[i]
		groupOf.Join(attemptOf[idx[0]], s)
		fp := ct.same(a)
		found := false
		for _, f := range payloads {
			if f.fp == fp {
				unitOf.Join(f.s, s)
				found = true
				break
			}
		}
		if !found {
			payloads = append(payloads, first{fp, s})
		}
		if classify(a, p) != succeeded || a.RespLen == 0 {
			continue
		}
		ans := answerOf(a)
		found = false
		for k, x := range ackAns {
			if x == ans {
				unitOf.Join(acks[k].s, s)
				found = true
				break
			}
		}
		if !found {
			ackAns, acks = append(ackAns, ans), append(acks, first{0, s})
		}
	}
}

// effectsOf returns the effects a group's only unit produced: the exact
// ones and the pool, in effect order.
func (at *attribution) effectsOf(g *group) []int32 {
	u := &at.units[at.unitsOf(g)[0]]
	out := append(append([]int32{}, at.exactOf(u)...), g.pool()...)
	slices.Sort(out)
	return out
}

// unionFind joins intents; find returns a set's representative, the
// earlier intent.
type unionFind = unionfind.Sets

func newUnionFind(n int) unionFind { return unionfind.New(n) }

// bucket lays out the items assigned to each of n lists (of[i] is the list
// of item i, -1 for none) in one array, keeping the items' order: list k is
// flat[start[k]:start[k+1]]. start reuses scratch when it is large enough.
func bucket(of []int32, n int, scratch []int32) (flat, start []int32) {
	if cap(scratch) >= n+1 {
		start = scratch[:n+1]
		clear(start)
	} else {
		start = make([]int32, n+1)
	}
	for _, k := range of {
		if k >= 0 {
			start[k+1]++
		}
	}
	for k := 1; k <= n; k++ {
		start[k] += start[k-1]
	}
	flat = make([]int32, start[n])
	for i, k := range of {
		if k >= 0 {
			flat[start[k]] = int32(i)
			start[k]++
		}
	}
	// start[k] is now where list k ends, which is where k+1 starts.
	copy(start[1:], start[:n])
	start[0] = 0
	return flat, start
}
