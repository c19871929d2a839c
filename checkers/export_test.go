package checkers

import "github.com/idemchaos/idemchaos/history"

// CheckOn runs a composite of [All] on up to workers goroutines, so that
// the tests can compare the checks run side by side with the checks run in
// series.
func CheckOn(c Checker, h *history.History, workers int) Result {
	return c.(all).checkOn(newIndex(h, h.Effects), workers)
}
