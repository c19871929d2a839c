package checkers

import (
	"cmp"
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

	// spare is byScope's string table, which byIntent reuses.
	spare *strTable

	intentMu sync.Mutex
	intents  *intentGroups

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
	return cmp.Compare(ix.h.Attempts[x].Invoke, ix.h.Attempts[y].Invoke)
}

// intentGroups are the attempts of every intent, in order of first
// attempt, each in history order. An attempt without an intent id belongs
// to the intent "", as any other.
type intentGroups struct {
	first     []int32 // first attempt of each intent
	of        []int32 // intent of each attempt
	flat, off []int32 // attempts of intent s: flat[off[s]:off[s+1]]
	table     *strTable
}

// byIntent groups the attempts by intent, once: the attribution of effects
// and the report's timelines read the same groups.
func (ix *index) byIntent() *intentGroups {
	ix.intentMu.Lock()
	defer ix.intentMu.Unlock()
	if ix.intents != nil {
		return ix.intents
	}
	h := ix.h
	ix.scopeMu.Lock()
	byID := ix.spare // byScope's table is done with: its arrays are reused
	ix.spare = nil
	ix.scopeMu.Unlock()
	if byID == nil {
		byID = newStrTable(len(h.Attempts))
	} else {
		byID.reset()
	}
	first := make([]int32, 0, len(h.Attempts))
	var id string
	isID := func(s int32) bool { return h.Attempts[first[s]].Intent == id }
	of := make([]int32, len(h.Attempts))
	for i := range h.Attempts {
		id = h.Attempts[i].Intent
		s, ok := byID.lookup(id, int32(len(first)), isID)
		if !ok {
			first = append(first, int32(i))
		}
		of[i] = s
	}
	flat, off := bucket(of, len(first), nil)
	ix.intents = &intentGroups{first: first, of: of, flat: flat, off: off, table: byID}
	return ix.intents
}

// attempts returns the attempts of intent id, in history order.
func (g *intentGroups) attempts(h *history.History, id string) []int32 {
	s, ok := g.table.get(id, func(s int32) bool { return h.Attempts[g.first[s]].Intent == id })
	if !ok {
		return nil
	}
	return g.flat[g.off[s]:g.off[s+1]:g.off[s+1]]
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

// Index is a history grouped by scope and by intent, each grouping built
// once on first use: the checks of a [Contract] share one, and the report
// draws its timelines from one, so a timeline's attempts are the ones its
// checker grouped. Safe for concurrent use.
type Index struct {
	ix *index

	once    sync.Once
	byKey   map[tenantKey][]int32 // attempts of each (tenant, key), every endpoint's, in history order
	keyless map[string][]int32    // attempts without a key, by tenant, in history order
	effKey  map[tenantKey][]int32 // effects of each (tenant, key)
	effInt  map[string][]int32    // effects that name an intent, by intent
	byOp    map[int64]int32
}

// NewIndex returns the index of h (its effects are h.Effects).
func NewIndex(h *history.History) *Index { return &Index{ix: newIndex(h, h.Effects)} }

// IntentAttempts returns the attempts of intent id, in history order;
// callers must not change them.
func (x *Index) IntentAttempts(id string) []int32 { return x.ix.byIntent().attempts(x.ix.h, id) }

// KeyAttempts returns the attempts that used key under tenant on any
// endpoint — the scopes a (tenant, key) spans — in history order; for key
// "", the tenant's attempts that carried none.
func (x *Index) KeyAttempts(tenant, key string) []int32 {
	x.build()
	if key == "" {
		return x.keyless[tenant]
	}
	return x.byKey[tenantKey{tenant, key}]
}

// KeyEffects returns the effects (indices into the history's Effects)
// recorded for key under tenant, in history order.
func (x *Index) KeyEffects(tenant, key string) []int32 {
	x.build()
	return x.effKey[tenantKey{tenant, key}]
}

// IntentEffects returns the effects that name intent id, in history order.
func (x *Index) IntentEffects(id string) []int32 {
	x.build()
	return x.effInt[id]
}

// AttemptOf returns the attempt of op (the last, if a producer repeated it).
func (x *Index) AttemptOf(op int64) (int, bool) {
	x.build()
	i, ok := x.byOp[op]
	return int(i), ok
}

// build makes the (tenant, key) groupings from the scopes: one map entry
// per scope rather than per attempt.
func (x *Index) build() {
	x.once.Do(func() {
		h := x.ix.h
		list, groups := x.ix.byScope()
		x.byKey = make(map[tenantKey][]int32, list.len())
		for g := range list.len() {
			s := list.at(g)
			tk := tenantKey{s.tenant, s.key}
			if prev, ok := x.byKey[tk]; ok {
				// A key used on several endpoints: its scopes joined.
				x.byKey[tk] = append(slices.Clip(prev), groups.at(g)...)
				continue
			}
			x.byKey[tk] = groups.at(g)
		}
		for tk, idx := range x.byKey {
			if !slices.IsSorted(idx) {
				idx = slices.Clone(idx) // a scope's group is the checkers': never reordered
				slices.Sort(idx)
				x.byKey[tk] = idx
			}
		}
		x.keyless = map[string][]int32{}
		x.byOp = make(map[int64]int32, len(h.Attempts))
		for i := range h.Attempts {
			a := &h.Attempts[i]
			x.byOp[a.Op] = int32(i)
			if a.Key == "" {
				x.keyless[a.Tenant] = append(x.keyless[a.Tenant], int32(i))
			}
		}
		x.effKey, x.effInt = map[tenantKey][]int32{}, map[string][]int32{}
		for i := range x.ix.effects {
			e := &x.ix.effects[i]
			tk := tenantKey{e.Tenant, e.Key}
			x.effKey[tk] = append(x.effKey[tk], int32(i))
			if e.Intent != "" {
				x.effInt[e.Intent] = append(x.effInt[e.Intent], int32(i))
			}
		}
	})
}
