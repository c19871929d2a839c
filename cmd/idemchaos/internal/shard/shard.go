// Package shard splits the scenario × seed pairs of a run across N
// processes that know nothing of each other (a CI matrix, a Kubernetes
// Indexed Job), and checks, when their reports come back, that together
// they ran every pair exactly once.
//
// The split is a pure function of the pair list, so every shard computes
// the same assignment and the merge can recompute it: pair p (scenarios in
// the order given, seeds ascending within each) goes to shard p mod N + 1.
// Round-robin keeps the shards even when one scenario is slower than the
// others.
package shard

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Spec is one shard of Total: Index runs from 1 to Total.
type Spec struct {
	Index, Total int
}

// String is the spec as --shard takes it: "2/4".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Total) }

// MaxTotal bounds the number of shards: past it the spec is a typo.
const MaxTotal = 10000

// Parse reads "i/N" (1 ≤ i ≤ N).
func Parse(v string) (Spec, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(v), "/")
	if !ok {
		return Spec{}, fmt.Errorf("--shard %q: want i/N, e.g. 2/4 (shards count from 1), or auto", v)
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return Spec{}, fmt.Errorf("--shard %q: want i/N with whole numbers, e.g. 2/4", v)
	}
	return check(Spec{i, n}, "--shard "+strconv.Quote(v))
}

func check(s Spec, what string) (Spec, error) {
	if s.Total < 1 || s.Total > MaxTotal {
		return Spec{}, fmt.Errorf("%s: %d shards: want 1 to %d", what, s.Total, MaxTotal)
	}
	if s.Index < 1 || s.Index > s.Total {
		return Spec{}, fmt.Errorf("%s: shard %d of %d: want 1 to %d (shards count from 1)", what, s.Index, s.Total, s.Total)
	}
	return s, nil
}

// EnvSource is one engine's pair of variables.
type EnvSource struct {
	Index, Total string
	// Base is the first index the engine hands out (0 or 1).
	Base int
}

// EnvSources are the variables --shard auto reads, first match wins.
// Kubernetes does not put a Job's completion count in the environment, so
// its total comes from IDEMCHAOS_SHARD_TOTAL (the manifest sets it).
var EnvSources = []EnvSource{
	{Index: "JOB_COMPLETION_INDEX", Total: "IDEMCHAOS_SHARD_TOTAL", Base: 0}, // Kubernetes Indexed Job
	{Index: "CI_NODE_INDEX", Total: "CI_NODE_TOTAL", Base: 1},                // GitLab CI parallel:
	{Index: "CIRCLE_NODE_INDEX", Total: "CIRCLE_NODE_TOTAL", Base: 0},        // CircleCI parallelism
	{Index: "BUILDKITE_PARALLEL_JOB", Total: "BUILDKITE_PARALLEL_JOB_COUNT", Base: 0},
}

// FromEnv finds this process's shard in the variables of the engine that
// started it (see [EnvSources]).
func FromEnv(lookup func(string) (string, bool)) (Spec, error) {
	for _, src := range EnvSources {
		iv, ok := lookup(src.Index)
		if !ok || strings.TrimSpace(iv) == "" {
			continue
		}
		what := fmt.Sprintf("--shard auto: %s=%s", src.Index, iv)
		i, err := strconv.Atoi(strings.TrimSpace(iv))
		if err != nil {
			return Spec{}, fmt.Errorf("%s: not a whole number", what)
		}
		tv, _ := lookup(src.Total)
		n, err := strconv.Atoi(strings.TrimSpace(tv))
		if err != nil {
			return Spec{}, fmt.Errorf("%s but %s=%q: want the number of shards", what, src.Total, tv)
		}
		return check(Spec{Index: i - src.Base + 1, Total: n}, what)
	}
	var names []string
	for _, src := range EnvSources {
		names = append(names, src.Index+"+"+src.Total)
	}
	return Spec{}, errors.New("--shard auto: none of " + strings.Join(names, ", ") + " is set")
}

// MaxSeeds bounds a seed range: every pair is a run, and a report lists them.
const MaxSeeds = 1_000_000

// ParseSeeds reads a seed list: "1-400", "7", "1-5,9,20-22". The seeds come
// back ascending without repeats, so that "1-3,2" and "1-3" split the same.
func ParseSeeds(v string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		if strings.HasPrefix(part, "-") { // a negative single seed
			lo, hi, isRange = part, "", false
		}
		a, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
		}
		if err != nil || part == "" {
			return nil, fmt.Errorf("--seeds %q: want seeds and ranges, e.g. 1-400 or 1-5,9", v)
		}
		if b < a {
			return nil, fmt.Errorf("--seeds %q: range %s runs backwards", v, part)
		}
		if b-a >= MaxSeeds || int64(len(out))+(b-a+1) > MaxSeeds {
			return nil, fmt.Errorf("--seeds %q: more than %d seeds", v, MaxSeeds)
		}
		for s := a; ; s++ {
			out = append(out, s)
			if s == b {
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatSeeds writes seeds (ascending) back in ParseSeeds's form, ranges
// folded: a report of 10000 seeds says "1-10000", not 10000 numbers.
func FormatSeeds(seeds []int64) string {
	var b strings.Builder
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(seeds[i], 10))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(seeds[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// MaxPairs bounds scenarios × seeds, the runs of one (sharded) run: the
// pair list is held in memory by every shard and by the merge. A crafted
// report of 10 KB naming 10,000 scenarios and a million seeds made merge
// take 13 GB.
const MaxPairs = 10_000_000

// CheckPairs refuses a run of more than [MaxPairs] pairs, before they are
// listed.
func CheckPairs(scenarios, seeds int) error {
	if scenarios > 0 && seeds > MaxPairs/scenarios {
		return fmt.Errorf("%d scenarios × %d seeds is more than %d runs", scenarios, seeds, MaxPairs)
	}
	return nil
}

// Pair is one run: the scenario (its index in the list given) and a seed.
type Pair struct {
	Scenario int
	Seed     int64
}

// Pairs lists every pair of scenarios × seeds in the canonical order:
// scenarios as given, seeds ascending within each.
func Pairs(scenarios int, seeds []int64) []Pair {
	out := make([]Pair, 0, scenarios*len(seeds))
	for s := range scenarios {
		for _, seed := range seeds {
			out = append(out, Pair{s, seed})
		}
	}
	return out
}

// Of returns the pairs of all that shard s runs, in order.
func Of(all []Pair, s Spec) []Pair {
	var out []Pair
	for p := s.Index - 1; p < len(all); p += s.Total {
		out = append(out, all[p])
	}
	return out
}
