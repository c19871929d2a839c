package history

import (
	"slices"
	"testing"
)

// A reserved guess that is too small, exact or too large must give the same
// values, in order, as no guess at all; only a close guess is kept as is.
func TestChunks_ReserveKeepsOrder(t *testing.T) {
	const n = 3*chunkLen + 17
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	for _, c := range []struct {
		at, room int // reserve room for room values after at have been added
	}{{0, 0}, {10, n / 2}, {chunkLen + 5, n}, {100, n + n/16}, {100, n + n/5}, {100, 2 * n}} {
		var ch chunks[int]
		for i := range n {
			if i == c.at && c.room > 0 {
				ch.reserve(c.room)
			}
			ch.add(i)
			// Values already added stay reachable, and writable, by index.
			*ch.at(int32(i / 2)) += 0
			if got := *ch.at(int32(i)); got != i {
				t.Fatalf("reserve %d at %d: at(%d) = %d", c.room, c.at, i, got)
			}
		}
		kept := ch.flat
		got := ch.slice()
		if !slices.Equal(got, want) {
			t.Fatalf("reserve %d at %d: values differ", c.room, c.at)
		}
		if cap(got) != len(got) {
			t.Fatalf("reserve %d at %d: cap %d, len %d: an append could reach the spare room", c.room, c.at, cap(got), len(got))
		}
		shared := len(kept) > 0 && &kept[0] == &got[0]
		if close := c.room >= n && c.room-n <= n/4; shared != close {
			t.Fatalf("reserve %d at %d: reserved slice kept = %v, want %v", c.room, c.at, shared, close)
		}
	}
}
