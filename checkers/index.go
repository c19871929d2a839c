package checkers

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// index holds what several checkers derive from one history: the attempts
// of every idempotency scope and the attribution of effects to intents.
// [All] builds one index per Check and shares it, so a million-event history
// is grouped once rather than once per checker; a checker run on its own
// builds its own. Parts are built on first use.
type index struct {
	h       *history.History
	effects []history.Effect

	// The checks of [All] may run side by side: each part is built once,
	// under its lock, by the first check that needs it.
	scopeMu, attrMu, clientMu sync.Mutex

	// clientV is the history grouped by intent, for the client checks.
	clientV *clientView

	grouped bool
	groups  scopeGroups // attempts of each scope, in order of first appearance, sorted by invoke time

	// spare is byScope's string table, which attribute reuses.
	spare *strTable

	attr        *attribution
	attrProfile Profile
	attrFP      string

	// deadline, when set, is when the checks that compare the attempts of
	// a key stop and call the keys they did not reach unknown.
	deadline time.Time
	budget   time.Duration
	polls    atomic.Int32 // atomic: checks that run side by side may ask
	over     atomic.Bool
}

// indexed is implemented by the checkers of this package: Check on a shared
// index, keeping what a merge of parts needs ([Part]).
type indexed interface {
	check(ix *index) Part
}

func newIndex(h *history.History, effects []history.Effect) *index {
	return &index{h: h, effects: effects}
}

// byScope returns the attempts of every scope that carried a key, in order
// of first appearance, each group sorted by invoke time (stable, so that
// attempts invoked at the same instant keep their history order). Attempts
// without a key have no scope to judge. Callers must not reorder a group.
func (ix *index) byScope() (scopeList, scopeGroups) {
	ix.scopeMu.Lock()
	defer ix.scopeMu.Unlock()
	if ix.grouped {
		return scopeList{ix.h, ix.groups}, ix.groups
	}
	ix.grouped = true
	h := ix.h
	// Scopes are found by key first (one string hash per attempt); the few
	// scopes that share a key across tenants or endpoints are chained
	// through next. A scope is kept as its first attempt: the scope
	// records are not kept at all once the groups are built (a scope is
	// its group's first attempt's), which saves 64 bytes a key.
	scopes := make([]int32, 0, len(h.Attempts))
	next, count := make([]int32, 0, len(h.Attempts)), make([]int32, 0, len(h.Attempts))
	byKey := newStrTable(len(h.Attempts))
	var key string
	isKey := func(g int32) bool { return h.Attempts[scopes[g]].Key == key }
	of := make([]int32, len(h.Attempts)) // scope of each attempt, -1 for none
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Key == "" {
			of[i] = -1
			continue
		}
		key = a.Key
		g, ok := byKey.lookup(key, int32(len(scopes)), isKey)
		if !ok {
			scopes, next, count = append(scopes, int32(i)), append(next, -1), append(count, 0)
		} else {
			for {
				if sc := &h.Attempts[scopes[g]]; sc.Tenant == a.Tenant && sc.Method == a.Method && sc.Path == a.Path {
					break
				}
				if next[g] < 0 {
					next[g] = int32(len(scopes))
					g = next[g]
					scopes, next, count = append(scopes, int32(i)), append(next, -1), append(count, 0)
					break
				}
				g = next[g]
			}
		}
		of[i] = g
		count[g]++
	}
	// Counting sort into one array: the groups are subslices of it.
	flat := make([]int32, len(h.Attempts))
	off := make([]int32, len(scopes)+1)
	for g, n := range count {
		off[g+1] = off[g] + n
	}
	fill := count[:0] // reused: fill[g] is where group g's next attempt goes
	fill = append(fill, off[:len(scopes)]...)
	for i, g := range of {
		if g >= 0 {
			flat[fill[g]] = int32(i)
			fill[g]++
		}
	}
	ix.groups = scopeGroups{flat, off}
	ix.spare = byKey
	for g := range scopes {
		idx := ix.groups.at(g)
		if !slices.IsSortedFunc(idx, ix.byInvoke) {
			slices.SortStableFunc(idx, ix.byInvoke)
		}
	}
	return scopeList{h, ix.groups}, ix.groups
}

// scopeList names the scopes of [index.byScope]'s groups: each scope is
// read off its group's first attempt, so no scope record is stored.
type scopeList struct {
	h      *history.History
	groups scopeGroups
}

func (l scopeList) len() int { return l.groups.len() }

// at returns scope g.
func (l scopeList) at(g int) scope { return scopeOf(&l.h.Attempts[l.groups.at(g)[0]]) }

// scopeGroups holds the attempts of every scope in one array, group g at
// flat[off[g]:off[g+1]]: a slice header a scope would cost 24 bytes.
type scopeGroups struct{ flat, off []int32 }

func (s scopeGroups) len() int { return len(s.off) - 1 }

// at returns the attempts of scope g; callers must not reorder them.
func (s scopeGroups) at(g int) []int32 { return s.flat[s.off[g]:s.off[g+1]:s.off[g+1]] }

func (ix *index) byInvoke(x, y int32) int {
	a, b := ix.h.Attempts[x].Invoke, ix.h.Attempts[y].Invoke
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// attribution returns the effects joined to intents under contract ct.
func (ix *index) attribution(ct *Contract) *attribution {
	ix.attrMu.Lock()
	defer ix.attrMu.Unlock()
	if ix.attr == nil || ix.attrProfile != ct.Profile || ix.attrFP != ct.Fingerprint {
		ix.attr, ix.attrProfile, ix.attrFP = attribute(ix, ct.Profile, ct), ct.Profile, ct.Fingerprint
	}
	return ix.attr
}

// expired reports whether the time budget ran out. It reads the clock
// only every 64 calls: it is asked once per key.
func (ix *index) expired() bool {
	if ix.deadline.IsZero() {
		return false
	}
	if ix.over.Load() {
		return true
	}
	if ix.polls.Add(1)&63 == 1 && time.Now().After(ix.deadline) {
		ix.over.Store(true)
	}
	return ix.over.Load()
}

// budgetReason says that left of n keys went unchecked.
func budgetReason(budget time.Duration, left, n int) string {
	return fmt.Sprintf("the time budget (--max-time %s) ran out: %d of %d keys were not checked", budget, left, n)
}
