package scenarios

import (
	"fmt"
	"strings"
)

// suggest returns the candidate closest to word by edit distance, when it
// is close enough to be a plausible typo (at most a third of the word's
// length, and at least 1, edits), else "".
func suggest(word string, candidates []string) string {
	best, bestD := "", -1
	limit := max(len([]rune(word))/3, 1)
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := levenshtein(lw, strings.ToLower(c))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean returns `; did you mean "x"?` or "".
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// levenshtein is the edit distance of a and b, in runes.
func levenshtein(a, b string) int {
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
