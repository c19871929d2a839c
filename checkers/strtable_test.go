package checkers

import (
	"fmt"
	"testing"
)

// strTable must agree with a Go map: every string found again under the
// value it was added with, absent ones absent, at full load.
func TestStrTable_AgreesWithMap(t *testing.T) {
	for _, n := range []int{1, 7, 1000, 20000} {
		keys := make([]string, 0, n)
		want := map[string]int32{}
		tab := newStrTable(n)
		var s string
		is := func(v int32) bool { return keys[v] == s }
		// Each string comes several times, interleaved, "" included.
		for round := range 3 {
			for i := range n {
				s = fmt.Sprint("k-", i*7919%n)
				if i == 0 {
					s = ""
				}
				v, ok := tab.lookup(s, int32(len(keys)), is)
				w, had := want[s]
				if ok != had || (had && v != w) {
					t.Fatalf("n=%d round %d: lookup(%q) = %d, %v; want %d, %v", n, round, s, v, ok, w, had)
				}
				if !ok {
					want[s] = v
					keys = append(keys, s)
				}
			}
		}
		for _, s = range []string{"k-x", "absent", fmt.Sprint("k-", n)} {
			if _, ok := tab.get(s, is); ok {
				t.Fatalf("n=%d: get(%q) found a string never added", n, s)
			}
		}
		for k, w := range want {
			s = k
			if v, ok := tab.get(s, is); !ok || v != w {
				t.Fatalf("n=%d: get(%q) = %d, %v; want %d", n, s, v, ok, w)
			}
		}
	}
}
