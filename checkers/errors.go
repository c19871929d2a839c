package checkers

import "errors"

// ErrUnknownInvariant is returned by [ByName] for a name that is not one of
// the invariants of DESIGN §4.
var ErrUnknownInvariant = errors.New("unknown invariant")

// ErrUnknownProfile is returned by [ProfileByName] for an unknown profile.
var ErrUnknownProfile = errors.New("unknown contract profile")

// ErrBadContract is returned for a [Contract] the checkers cannot judge by.
var ErrBadContract = errors.New("bad contract")
