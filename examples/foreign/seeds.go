package foreign

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSeeds reads a seed list as CORPUS_SEEDS spells it: a number N alone
// is seeds 1 to N (the corpus's old form); otherwise a comma-separated list
// of seeds and ranges A-B, run in the order written ("52,61", "30-35,82",
// "52," for seed 52 alone). It is how a miss seen at one seed of the bench
// is rerun at that seed alone.
func ParseSeeds(spec string) ([]int64, error) {
	spec = strings.TrimSpace(spec)
	if n, err := strconv.ParseInt(spec, 10, 64); err == nil {
		if n < 1 {
			return nil, fmt.Errorf("seeds %q: want a positive number, or seeds and ranges A-B separated by commas", spec)
		}
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i + 1)
		}
		return out, nil
	}
	var out []int64
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseInt(hi, 10, 64)
		}
		if err != nil || a < 1 || b < a {
			return nil, fmt.Errorf("seeds %q: %q is not a seed or a range A-B of positive seeds", spec, part)
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("seeds %q: no seed", spec)
	}
	return out, nil
}
