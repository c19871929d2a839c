package checkers

import "hash/maphash"

// strTable maps strings to int32 values, for the groupings of every
// attempt of a history (by key, by intent). It keeps no strings of its own: the caller says whether value v
// stands for a string. An open-addressed table of int32s and a byte of each
// hash is a fraction of a Go map's size for hundreds of thousands of
// strings, so fewer of its lookups miss the cache.
type strTable struct {
	slots []int32 // value + 1; 0 for an empty slot
	tags  []uint8 // top byte of the hash of the slot's string
	mask  uint64
}

var strSeed = maphash.MakeSeed()

// newStrTable returns a table for at most n strings: it never grows.
func newStrTable(n int) *strTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return &strTable{slots: make([]int32, size), tags: make([]uint8, size), mask: uint64(size - 1)}
}

// lookup returns the value of s (is tells whether value v stands for s) or,
// when s is absent, adds it with value next and returns next, false.
// reset empties the table for reuse.
func (t *strTable) reset() {
	clear(t.slots)
	clear(t.tags)
}

func (t *strTable) lookup(s string, next int32, is func(v int32) bool) (int32, bool) {
	h := maphash.String(strSeed, s)
	tag := uint8(h >> 56)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		v := t.slots[i]
		if v == 0 {
			t.slots[i], t.tags[i] = next+1, tag
			return next, false
		}
		if t.tags[i] == tag && is(v-1) {
			return v - 1, true
		}
	}
}

// get returns the value of s, if it was added.
func (t *strTable) get(s string, is func(v int32) bool) (int32, bool) {
	h := maphash.String(strSeed, s)
	tag := uint8(h >> 56)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		v := t.slots[i]
		if v == 0 {
			return 0, false
		}
		if t.tags[i] == tag && is(v-1) {
			return v - 1, true
		}
	}
}
