package checkers

import (
	"fmt"
	"sort"
)

// Profile is a status-code contract. The IETF draft on the Idempotency-Key
// header only says SHOULD, and real services differ, so checkers read the
// statuses from a profile instead of hard-coding them.
type Profile struct {
	Name string
	// MissingKey is the status for a request without a usable key; 0 means
	// the service executes such requests without idempotency (Stripe).
	MissingKey int
	// Reuse is the status for a key reused with a different payload.
	Reuse int
	// InFlight is the status for a duplicate that arrives while the first
	// attempt with its key is still being processed.
	InFlight int
	// Refuse, when set, is the status of a service that refuses every
	// repeat of a key (contract repeat: refuse): an identical retry, a
	// duplicate in flight and a reuse all get it, never a replay. It is a
	// definite answer (the refusal), not a "not now".
	Refuse int
	_      struct{}
}

var profiles = map[string]Profile{
	// The IETF httpapi draft: 400 missing, 422 reuse, 409 in flight.
	"ietf": {Name: "ietf", MissingKey: 400, Reuse: 422, InFlight: 409},
	// Stripe: keys are optional, a reused key with other parameters is a 400
	// idempotency_error, a concurrent duplicate is a 409.
	"stripe": {Name: "stripe", MissingKey: 0, Reuse: 400, InFlight: 409},
}

// ProfileByName returns a built-in profile: "ietf" or "stripe".
func ProfileByName(name string) (Profile, error) {
	p, ok := profiles[name]
	if !ok {
		names := make([]string, 0, len(profiles))
		for n := range profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return Profile{}, fmt.Errorf("%w %q (built-in: %v, or set missing_key/reuse/in_flight for a custom one)", ErrUnknownProfile, name, names)
	}
	return p, nil
}

// DefaultProfile is the profile checkers use unless told otherwise: ietf.
func DefaultProfile() Profile { return profiles["ietf"] }
