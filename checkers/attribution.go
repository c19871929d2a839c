package checkers

import "github.com/idemchaos/idemchaos/history"

// intentState is what one intent did and produced.
type intentState struct {
	id       string
	attempts []int32 // indices into h.Attempts, in history order
	effects  []int32 // indices into effects
	acked    int32   // first attempt with a 2xx, or -1
	anyIndet bool    // some attempt may have executed unseen
}

// attribution joins effects to the intents that caused them.
type attribution struct {
	intents []*intentState // in order of first attempt
	byID    map[string]*intentState
	orphans int // effects no attempt of the history explains
}

type tenantKey struct{ tenant, key string }

// attribute assigns every effect to one intent: by its intent field when the
// oracle could tell it, else by (tenant, key). When one key was used by
// several intents (a reused key), the effect goes to the intent the service
// acknowledged first, since that is the one it claims to have executed.
func attribute(h *history.History, effects []history.Effect, p Profile) *attribution {
	at := &attribution{byID: make(map[string]*intentState)}
	byKey := make(map[tenantKey][]*intentState)
	for i := range h.Attempts {
		a := &h.Attempts[i]
		st, ok := at.byID[a.Intent]
		if !ok {
			st = &intentState{id: a.Intent, acked: -1}
			at.byID[a.Intent] = st
			at.intents = append(at.intents, st)
		}
		st.attempts = append(st.attempts, int32(i))
		switch classify(a, p) {
		case succeeded:
			if st.acked < 0 {
				st.acked = int32(i)
			}
		case indeterminate:
			st.anyIndet = true
		}
		tk := tenantKey{a.Tenant, a.Key}
		if list := byKey[tk]; len(list) == 0 || list[len(list)-1] != st {
			if !contains(list, st) {
				byKey[tk] = append(list, st)
			}
		}
	}
	for i := range effects {
		e := &effects[i]
		if e.Intent != "" {
			if st, ok := at.byID[e.Intent]; ok {
				st.effects = append(st.effects, int32(i))
				continue
			}
		}
		st := pickIntent(h, byKey[tenantKey{e.Tenant, e.Key}])
		if st == nil {
			at.orphans++
			continue
		}
		st.effects = append(st.effects, int32(i))
	}
	return at
}

func contains(list []*intentState, st *intentState) bool {
	for _, s := range list {
		if s == st {
			return true
		}
	}
	return false
}

// pickIntent chooses among the intents that used one key: the earliest
// acknowledged, else the first that may have executed, else the first.
func pickIntent(h *history.History, list []*intentState) *intentState {
	if len(list) <= 1 {
		if len(list) == 0 {
			return nil
		}
		return list[0]
	}
	var best *intentState
	for _, st := range list {
		if st.acked >= 0 && (best == nil || best.acked < 0 || h.Attempts[st.acked].Complete < h.Attempts[best.acked].Complete) {
			best = st
		}
	}
	if best != nil {
		return best
	}
	for _, st := range list {
		if st.anyIndet {
			return st
		}
	}
	return list[0]
}
