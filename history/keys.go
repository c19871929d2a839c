package history

import (
	"cmp"
	"slices"
)

// KeySequences returns, for each intent whose attempts changed key, the
// keys they carried in the order sent (each run of one key once): what a
// report draws as a key break. Intents that kept one key are left out.
// Both the report of a whole history and a check cut into partitions
// (each holding whole intents) read it, so that both say the same.
func KeySequences(h *History) map[string][]string {
	seqs := map[string][]string{}
	byIntent := map[string][]int{}
	for i := range h.Attempts {
		byIntent[h.Attempts[i].Intent] = append(byIntent[h.Attempts[i].Intent], i)
	}
	for in, idx := range byIntent {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(h.Attempts[a].Invoke, h.Attempts[b].Invoke) })
		var seq []string
		for _, i := range idx {
			if k := h.Attempts[i].Key; len(seq) == 0 || seq[len(seq)-1] != k {
				seq = append(seq, k)
			}
		}
		if len(seq) > 1 {
			seqs[in] = seq
		}
	}
	return seqs
}
