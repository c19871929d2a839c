package unionfind

import "testing"

// The smallest member represents a set whatever order the joins came in,
// and joining within a set changes nothing.
func TestSmallestRepresents(t *testing.T) {
	u := New(6)
	u.Join(4, 2)
	u.Join(5, 4)
	u.Join(3, 1)
	u.Join(2, 5) // already one set
	want := []int32{0, 1, 2, 1, 2, 2}
	for i, w := range want {
		if got := u.Find(int32(i)); got != w {
			t.Errorf("Find(%d) = %d, want %d", i, got, w)
		}
	}
	u.Join(5, 3)
	for i, w := range []int32{0, 1, 1, 1, 1, 1} {
		if got := u.Find(int32(i)); got != w {
			t.Errorf("after joining the two sets: Find(%d) = %d, want %d", i, got, w)
		}
	}
}
