package scenarios

import (
	"fmt"
	"strings"
)

// The idempotency keys of a run (docs/scenarios.md, "Keys"). Against the
// reference, which starts from an empty database every run, a key is
// "<step>k<seed>-<n>": "k7-3" is the third intent of seed 7, "s2k8-3" the
// same in the second step (step i draws from seed+i). A user's service remembers every key it ever
// saw, so its keys carry the scenario's name and a nonce of the run first:
// "orders-1f2e3d4c-k7-3". Duplicates, reuses, shared keys, resends and
// callbacks reuse keys drawn this way; no other key is sent.

// NonceLength is the length of the run's nonce in a user's service's keys
// (hex digits).
const NonceLength = 8

// MaxValidatedSeed is the largest seed [Load] checks contract.max_key_length
// for; a run with a larger seed checks its own keys before it starts.
const MaxValidatedSeed = 999999

// KeyPrefix is what a run's keys start with: "" against the reference,
// "<name>-<nonce>-" against a user's service.
func (s *Scenario) KeyPrefix(nonce string) string {
	if s.Target.Reference != nil {
		return ""
	}
	return s.Name + "-" + nonce + "-"
}

// StepKeyPrefix is what the keys of step i (from 0) add after the run's
// prefix: "" for the first, "s2" for the second.
func StepKeyPrefix(i int) string {
	if i == 0 {
		return ""
	}
	return fmt.Sprintf("s%d", i+1)
}

// Key is the key of intent n (from 1) of step i (from 0) of a run with
// this seed, after prefix: step i draws from seed+i.
func Key(prefix string, step int, seed int64, n int) string {
	return fmt.Sprintf("%s%sk%d-%d", prefix, StepKeyPrefix(step), seed+int64(step), n)
}

// LongestKey is the longest key a run of s with this seed sends (its
// nonce shown as x's).
func (s *Scenario) LongestKey(seed int64) string {
	prefix := s.KeyPrefix(strings.Repeat("x", NonceLength))
	longest := ""
	for i, st := range s.EffectiveSteps() {
		n := s.Traffic.Intents
		if st.Traffic != nil && st.Traffic.Intents > 0 {
			n = st.Traffic.Intents
		}
		if k := Key(prefix, i, seed, max(n, 1)); len(k) > len(longest) {
			longest = k
		}
	}
	return longest
}

// KeyLength is the length of [Scenario.LongestKey].
func (s *Scenario) KeyLength(seed int64) int { return len(s.LongestKey(seed)) }
