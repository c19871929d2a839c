package checkers

import (
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

// intentState is what one intent did and produced.
type intentState struct {
	id       string
	attempts []int32 // indices into h.Attempts, in history order
	effects  []int32 // effects attributed to it exactly (by intent), in effect order
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
	indet   bool
	exact   []int32 // effects attributed exactly to one of its intents
	group   *group
}

// executed reports whether the unit has an effect that is surely its own.
func (u *unit) executed() bool {
	return len(u.exact) > 0 || (len(u.group.units) == 1 && len(u.group.pool) > 0)
}

// group is a set of units joined by the (tenant, key)s they used: the
// effects that name only a (tenant, key) ([history.Effect] without a
// known intent) are shared by the group, and only their count can be
// judged when the group holds more than one unit.
type group struct {
	units []*unit
	pool  []int32 // effects attributed by (tenant, key) only
}

// attribution joins effects to intents.
type attribution struct {
	intents []*intentState // in order of first attempt
	groups  []*group       // in order of first attempt
	orphans int            // effects no attempt of the history explains
}

type tenantKey struct{ tenant, key string }

// attribute assigns every effect: to one intent when the effect names it,
// else to the group of the intents that used its (tenant, key). Intents
// that share a key and a payload, or whose acknowledgment is byte for byte
// the other's, are one unit: a correct service executes them once.
func attribute(h *history.History, effects []history.Effect, p Profile, ct *Contract) *attribution {
	byID := make(map[string]int32, len(h.Attempts))
	states := make([]intentState, 0, len(h.Attempts))
	attemptOf := make([]int32, len(h.Attempts))
	for i := range h.Attempts {
		a := &h.Attempts[i]
		s, ok := byID[a.Intent]
		if !ok {
			s = int32(len(states))
			byID[a.Intent] = s
			states = append(states, intentState{id: a.Intent, acked: -1})
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
	at := &attribution{intents: make([]*intentState, len(states))}
	for s := range states {
		at.intents[s] = &states[s]
	}
	spread(attemptOf, states, func(st *intentState) *[]int32 { return &st.attempts })

	// Join intents into units and groups with two union-finds over the
	// intents: units by (tenant, key, payload) and by a replayed
	// acknowledgment, groups by (tenant, key).
	unitOf, groupOf := newUnionFind(len(states)), newUnionFind(len(states))
	byKey := make(map[tenantKey]int32, len(states))
	type keyPayload struct {
		tk tenantKey
		fp uint64
	}
	byPayload := make(map[keyPayload]int32, len(states))
	type keyAnswer struct {
		tk tenantKey
		a  answer
	}
	byAnswer := make(map[keyAnswer]int32)
	for i := range h.Attempts {
		a := &h.Attempts[i]
		s := attemptOf[i]
		tk := tenantKey{a.Tenant, a.Key}
		if f, ok := byKey[tk]; ok {
			groupOf.join(f, s)
		} else {
			byKey[tk] = s
		}
		if a.Key == "" {
			continue // without a key, two requests are two executions
		}
		kp := keyPayload{tk, ct.same(a)}
		if f, ok := byPayload[kp]; ok {
			unitOf.join(f, s)
		} else {
			byPayload[kp] = s
		}
		if classify(a, p) == succeeded && a.RespLen > 0 {
			ka := keyAnswer{tk, answerOf(a)}
			if f, ok := byAnswer[ka]; ok {
				unitOf.join(f, s)
			} else {
				byAnswer[ka] = s
			}
		}
	}
	// Units and groups are indexed by their representative intent and
	// allocated from one block each: there are nearly as many as intents.
	units := make([]*unit, len(states))
	groups := make([]*group, len(states))
	unitBlock := make([]unit, 0, len(states))
	groupBlock := make([]group, 0, len(states))
	for s := range states {
		st := &states[s]
		u := units[unitOf.find(int32(s))]
		if u == nil {
			unitBlock = append(unitBlock, unit{})
			u = &unitBlock[len(unitBlock)-1]
			units[unitOf.find(int32(s))] = u
			g := groups[groupOf.find(int32(s))]
			if g == nil {
				groupBlock = append(groupBlock, group{})
				g = &groupBlock[len(groupBlock)-1]
				groups[groupOf.find(int32(s))] = g
				at.groups = append(at.groups, g)
			}
			g.units = append(g.units, u)
			u.group = g
		}
		u.intents = append(u.intents, st)
		st.unit = u
		if st.acked >= 0 && (u.acked == nil || h.Attempts[st.acked].Complete < h.Attempts[u.acked.acked].Complete) {
			u.acked = st
		}
		u.indet = u.indet || st.anyIndet
	}

	effectOf := make([]int32, len(effects))
	for i := range effects {
		e := &effects[i]
		effectOf[i] = -1
		if e.Intent != "" {
			if s, ok := byID[e.Intent]; ok {
				effectOf[i] = s
				u := states[s].unit
				u.exact = append(u.exact, int32(i))
				continue
			}
		}
		s, ok := byKey[tenantKey{e.Tenant, e.Key}]
		if !ok {
			at.orphans++
			continue
		}
		g := groups[groupOf.find(s)]
		g.pool = append(g.pool, int32(i))
	}
	spread(effectOf, states, func(st *intentState) *[]int32 { return &st.effects })
	return at
}

// effectsOf returns the effects a group's only unit produced: the exact
// ones and the pool, in effect order.
func (g *group) effectsOf() []int32 {
	out := append(append([]int32{}, g.units[0].exact...), g.pool...)
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
func spread(of []int32, states []intentState, list func(*intentState) *[]int32) {
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
