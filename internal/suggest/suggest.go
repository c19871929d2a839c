// Package suggest finds the known name a mistyped one was meant to be: one
// edit distance and one "did you mean" rule for every place that refuses a
// name (scenario keys and fault parameters, mutants, invariants).
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate closest to word by edit distance, when it
// is close enough to be a plausible typo (at most a third of the word's
// length, and at least 1, edits; case is ignored), else "".
func Closest(word string, candidates []string) string {
	best, bestD := "", -1
	limit := max(len([]rune(word))/3, 1)
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := Distance(lw, strings.ToLower(c))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean returns `; did you mean "x"?` for the closest candidate, or "".
func DidYouMean(word string, candidates []string) string {
	if s := Closest(word, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// Distance is the Levenshtein distance of a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
