package bench

import "errors"

// ErrGate is wrapped by [Report.Gate] and [Quick] when the evidence does
// not hold: a mutant escaped a seed, or the correct reference showed a
// violation or an inconclusive verdict.
var ErrGate = errors.New("bench gate")

// ErrUnknownSection is returned for a section name [Sections] does not list.
var ErrUnknownSection = errors.New("unknown bench section")
