package checkers

import (
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

// intentState is what one intent did and produced.
//
// A history holds hundreds of thousands of intents, so the record is kept
// small: its id is its first attempt's, and the effects attributed to it
// are kept only on its unit ([unit.exact]).
type intentState struct {
	attempts []int32 // indices into h.Attempts, in history order
	acked    int32   // first attempt with a 2xx, or -1
	anyIndet bool    // some attempt may have executed unseen
	unit     *unit
}

// unit is what the service must treat as one request: one intent, or
// several intents it cannot tell apart because they share a key and a
// payload (or one was answered with the other's stored response). A unit
// that was acknowledged must have one effect; one that may have executed,
// at most one; one only ever rejected, none.
type unit struct {
	intents []*intentState
	acked   *intentState // the first acknowledged intent, or nil
	exact   []int32      // effects attributed exactly to one of its intents
	group   *group
}

// id returns the intent's id.
func (st *intentState) id(h *history.History) string { return h.Attempts[st.attempts[0]].Intent }

// indet reports whether some attempt of the unit may have executed unseen.
func (u *unit) indet() bool {
	for _, st := range u.intents {
		if st.anyIndet {
			return true
		}
	}
	return false
}

// executed reports whether the unit has an effect that is surely its own.
func (u *unit) executed() bool {
	return len(u.exact) > 0 || (len(u.group.units) == 1 && len(u.group.pool()) > 0)
}

// group is a set of units joined by the (tenant, key)s they used: the
// effects that name only a (tenant, key) ([history.Effect] without a
// known intent) are shared by the group, and only their count can be
// judged when the group holds more than one unit.
type group struct {
	units  []*unit
	shared *[]int32 // effects attributed by (tenant, key) only; a pointer, as most groups have none
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
	groups  []group       // in order of first attempt
	orphans int           // effects no attempt of the history explains
}

type tenantKey struct{ tenant, key string }

// attribute assigns every effect: to one intent when the effect names it,
// else to the group of the intents that used its (tenant, key). Intents
// that share a key and a payload, or whose acknowledgment is byte for byte
// the other's, are one unit: a correct service executes them once.
//
// It costs one map lookup per attempt (intent ids) and per effect; the
// joins are found through the scopes [index.byScope] already grouped, and
// the (tenant, key) map that joins intents across endpoints and requests
// without a key is built only when some effect names no known intent.
func attribute(ix *index, p Profile, ct *Contract) *attribution {
	h, effects := ix.h, ix.effects
	order, scopeGroups := ix.byScope()
	// byScope's table is done with: its arrays are reused.
	byID := ix.spare
	ix.spare = nil
	if byID == nil {
		byID = newStrTable(len(h.Attempts))
	} else {
		byID.reset()
	}
	states := make([]intentState, 0, len(h.Attempts))
	var id string
	firstOf := make([]int32, 0, len(h.Attempts)) // first attempt of each state
	isID := func(s int32) bool { return h.Attempts[firstOf[s]].Intent == id }
	attemptOf := make([]int32, len(h.Attempts))
	for i := range h.Attempts {
		a := &h.Attempts[i]
		id = a.Intent
		s, ok := byID.lookup(id, int32(len(states)), isID)
		if !ok {
			states = append(states, intentState{acked: -1})
			firstOf = append(firstOf, int32(i))
		}
		attemptOf[i] = s
		st := &states[s]
		switch classify(a, p) {
		case succeeded:
			if st.acked < 0 {
				st.acked = int32(i)
			}
		case indeterminate:
			st.anyIndet = true
		}
	}
	at := &attribution{intents: states}
	spread(attemptOf, states, func(st *intentState) *[]int32 { return &st.attempts })

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
			if int(next) < len(states) && h.Attempts[firstOf[next]].Intent == e.Intent {
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
				groupOf.join(f, attemptOf[j])
			} else {
				byKey[tk] = attemptOf[j]
			}
		}
	}

	// Number the units and groups in order of first intent, then lay their
	// member lists out in two flat arrays (no allocation per unit).
	unitNo := make([]int32, len(states)) // unit of each intent
	groupNo := make([]int32, 0, len(states))
	// One element longer than needed: they are reused below as nIntents
	// and nUnits, which need one more than there are units and groups.
	rootUnit := make([]int32, len(states)+1) // unit number of each root + 1
	rootGroup := make([]int32, len(states)+1)
	for s := range states {
		ur := unitOf.find(int32(s))
		if rootUnit[ur] == 0 {
			gr := groupOf.find(int32(s))
			if rootGroup[gr] == 0 {
				rootGroup[gr] = int32(len(groupNo)) + 1
			}
			groupNo = append(groupNo, rootGroup[gr]-1) // the group of unit len(groupNo)
			rootUnit[ur] = int32(len(groupNo))
		}
		unitNo[s] = rootUnit[ur] - 1
	}
	nGroups := 0
	for _, g := range groupNo {
		nGroups = max(nGroups, int(g)+1)
	}
	units := make([]unit, len(groupNo))
	groups := make([]group, nGroups)
	intentsFlat := make([]*intentState, len(states))
	unitsFlat := make([]*unit, len(units))
	nIntents := rootUnit[:len(units)+1]
	clear(nIntents)
	for _, u := range unitNo {
		nIntents[u+1]++
	}
	nUnits := rootGroup[:nGroups+1]
	clear(nUnits)
	for _, g := range groupNo {
		nUnits[g+1]++
	}
	for i := 1; i < len(nIntents); i++ {
		nIntents[i] += nIntents[i-1]
	}
	for i := 1; i < len(nUnits); i++ {
		nUnits[i] += nUnits[i-1]
	}
	for u := range units {
		units[u].intents = intentsFlat[nIntents[u]:nIntents[u]:nIntents[u+1]]
		units[u].group = &groups[groupNo[u]]
	}
	for g := range groups {
		groups[g].units = unitsFlat[nUnits[g]:nUnits[g]:nUnits[g+1]]
	}
	for u := range units {
		g := &groups[groupNo[u]]
		g.units = append(g.units, &units[u])
	}
	for s := range states {
		st := &states[s]
		u := &units[unitNo[s]]
		u.intents = append(u.intents, st)
		st.unit = u
		if st.acked >= 0 && (u.acked == nil || h.Attempts[st.acked].Complete < h.Attempts[u.acked.acked].Complete) {
			u.acked = st
		}
	}
	at.groups = groups

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
		g := states[s].unit.group
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
	spread(effectOf, units, func(u *unit) *[]int32 { return &u.exact })
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
		groupOf.join(attemptOf[idx[0]], s)
		fp := ct.same(a)
		found := false
		for _, f := range payloads {
			if f.fp == fp {
				unitOf.join(f.s, s)
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
				unitOf.join(acks[k].s, s)
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
func (g *group) effectsOf() []int32 {
	out := append(append([]int32{}, g.units[0].exact...), g.pool()...)
	slices.Sort(out)
	return out
}

// unionFind joins intents; find returns a set's representative.
type unionFind []int32

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = int32(i)
	}
	return u
}

func (u unionFind) find(x int32) int32 {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) join(a, b int32) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	u[rb] = ra // the earlier intent represents the set
}

// spread gives every state the list of the items assigned to it (of[i] is
// the state of item i, -1 for none), keeping the items' order.
func spread[T any](of []int32, states []T, list func(*T) *[]int32) {
	n := make([]int32, len(states)+1)
	for _, s := range of {
		if s >= 0 {
			n[s+1]++
		}
	}
	for s := 1; s < len(n); s++ {
		n[s] += n[s-1]
	}
	flat := make([]int32, n[len(states)])
	for s := range states {
		*list(&states[s]) = flat[n[s]:n[s]:n[s+1]]
	}
	for i, s := range of {
		if s >= 0 {
			l := list(&states[s])
			*l = append(*l, int32(i))
		}
	}
}
