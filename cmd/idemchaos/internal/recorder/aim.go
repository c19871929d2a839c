package recorder

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Aim is one client-path fault of a fault file and when it acts, as a
// client scenario says it: a fraction of intents (drawn from the seed and
// the intent's name, so a rerun with the same seed hits the same
// intents), every nth intent in order of first appearance, or neither
// (the first intent); from attempt Attempt (default 1), Attempts
// consecutive attempts (default 1) or Every one. A fault giving only at
// or for is a window from the recording's start hitting every attempt.
type Aim struct {
	// Kind names the fault in the history's fault events.
	Kind   string
	answer faults.Answer
	when   scenarios.When
	index  int
}

// NewAim builds the i-th fault of a fault file; it must act on a
// client's path.
func NewAim(i int, spec scenarios.FaultSpec) (Aim, error) {
	f, err := spec.Build()
	if err != nil {
		return Aim{}, err
	}
	a, ok := faults.ClientPathOf(f)
	if !ok {
		return Aim{}, fmt.Errorf("faults[%d]: %s does not act on a client's path", i, spec.Kind)
	}
	return Aim{Kind: spec.Kind, answer: a, when: spec.When, index: i}, nil
}

func (a Aim) timed() bool {
	w := a.when
	return (w.At > 0 || w.For > 0) && w.Fraction == 0 && w.Nth == 0 && w.Attempts == 0 && !w.Every
}

// hits says whether a acts on attempt n of intent (the index-th to
// appear) arriving at since the recording's start.
func (a Aim) hits(seed int64, intent string, index, n int, at time.Duration) bool {
	w := a.when
	if a.timed() {
		return at >= w.At && (w.For <= 0 || at < w.At+w.For)
	}
	switch {
	case w.Nth > 0:
		if (index+1)%w.Nth != 0 {
			return false
		}
	case w.Fraction > 0:
		if draw(seed, a.index, intent) >= w.Fraction {
			return false
		}
	default:
		if index != 0 {
			return false
		}
	}
	if w.Every {
		return true
	}
	first := max(w.Attempt, 1)
	return n >= first && n < first+max(w.Attempts, 1)
}

// draw is a uniform number in [0, 1) fixed by the seed, the fault and the
// intent.
func draw(seed int64, fault int, intent string) float64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(fault))
	h.Write(b[:])
	h.Write([]byte(intent))
	return float64(mix(h.Sum64())>>11) / (1 << 53)
}

// mix is splitmix64's finaliser: FNV's low bits alone are not uniform.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
