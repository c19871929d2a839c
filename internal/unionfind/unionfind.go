// Package unionfind is the module's one union-find: disjoint sets over the
// items 0..n-1, each represented by its smallest member, so that a set is
// named by its earliest item (the first intent, the first partition)
// whatever order the joins came in. The checkers join intents into units
// and groups with it, the partitioned check joins partitions an intent
// spans.
package unionfind

// Sets holds the sets: Sets[i] leads from item i towards its set's
// representative.
type Sets []int32

// New returns n items, each a set of its own.
func New(n int) Sets {
	u := make(Sets, n)
	for i := range u {
		u[i] = int32(i)
	}
	return u
}

// Find returns the representative of x's set, halving the path on the way.
func (u Sets) Find(x int32) int32 {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

// Join merges the sets of a and b; the smaller representative stays.
func (u Sets) Join(a, b int32) {
	ra, rb := u.Find(a), u.Find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	u[rb] = ra
}
