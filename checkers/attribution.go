package checkers

import "github.com/idemchaos/idemchaos/history"

// intentState is what one intent did and produced.
type intentState struct {
	id       string
	attempts []int32 // indices into h.Attempts, in history order
	effects  []int32 // indices into effects, in effect order
	acked    int32   // first attempt with a 2xx, or -1
	anyIndet bool    // some attempt may have executed unseen
}

// attribution joins effects to the intents that caused them.
type attribution struct {
	intents []*intentState // in order of first attempt
	orphans int            // effects no attempt of the history explains
}

type tenantKey struct{ tenant, key string }

// attribute assigns every effect to one intent: by its intent field when the
// oracle could tell it, else by (tenant, key). When one key was used by
// several intents (a reused key), the effect goes to the intent the service
// acknowledged first, since that is the one it claims to have executed.
//
// It runs in linear time with a handful of allocations: the states live in
// one slice, and the attempt and effect lists are subslices of two arrays
// filled by counting sort.
func attribute(h *history.History, effects []history.Effect, p Profile) *attribution {
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
	var keys *keyIntents // built when an effect does not name a known intent
	effectOf := make([]int32, len(effects))
	for i := range effects {
		e := &effects[i]
		if e.Intent != "" {
			if s, ok := byID[e.Intent]; ok {
				effectOf[i] = s
				continue
			}
		}
		if keys == nil {
			keys = intentsByKey(h, attemptOf)
		}
		tk := tenantKey{e.Tenant, e.Key}
		s, ok := keys.first[tk]
		if !ok {
			effectOf[i] = -1
			at.orphans++
			continue
		}
		if list := keys.more[tk]; len(list) > 0 {
			s = pickIntent(h, states, append([]int32{s}, list...))
		}
		effectOf[i] = s
	}
	spread(attemptOf, states, func(st *intentState) *[]int32 { return &st.attempts })
	spread(effectOf, states, func(st *intentState) *[]int32 { return &st.effects })
	return at
}

// keyIntents lists the intents that used each (tenant, key): first is the
// first one, more the others in order of first use (a reused key: rare).
type keyIntents struct {
	first map[tenantKey]int32
	more  map[tenantKey][]int32
}

func intentsByKey(h *history.History, attemptOf []int32) *keyIntents {
	k := &keyIntents{first: make(map[tenantKey]int32, len(h.Attempts))}
	for i := range h.Attempts {
		a, s := &h.Attempts[i], attemptOf[i]
		tk := tenantKey{a.Tenant, a.Key}
		if f, ok := k.first[tk]; !ok {
			k.first[tk] = s
		} else if f != s && !containsInt(k.more[tk], s) {
			if k.more == nil {
				k.more = make(map[tenantKey][]int32)
			}
			k.more[tk] = append(k.more[tk], s)
		}
	}
	return k
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

func containsInt(list []int32, s int32) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pickIntent chooses among the intents that used one key: the earliest
// acknowledged, else the first that may have executed, else the first.
func pickIntent(h *history.History, states []intentState, list []int32) int32 {
	best := int32(-1)
	for _, s := range list {
		st := &states[s]
		if st.acked >= 0 && (best < 0 || h.Attempts[st.acked].Complete < h.Attempts[states[best].acked].Complete) {
			best = s
		}
	}
	if best >= 0 {
		return best
	}
	for _, s := range list {
		if states[s].anyIndet {
			return s
		}
	}
	return list[0]
}
