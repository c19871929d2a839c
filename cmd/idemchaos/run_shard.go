package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/shard"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

// runWork is what one run command runs: its scenario × seed pairs, and,
// when it is a shard, which one (for its report).
type runWork struct {
	pairs []shard.Pair
	shard *report.Shard
}

// pairsOf reads --seed, --seeds and --shard into the pairs to run.
func (m *Main) pairsOf(cmd *cobra.Command, f runFlags, ss []*scenarios.Scenario) (runWork, error) {
	seeds := []int64{f.seed}
	if f.seeds != "" {
		if cmd.Flags().Changed("seed") {
			return runWork{}, errors.New("run: give --seed or --seeds, not both")
		}
		var err error
		if seeds, err = shard.ParseSeeds(f.seeds); err != nil {
			return runWork{}, err
		}
	}
	if err := shard.CheckPairs(len(ss), len(seeds)); err != nil {
		return runWork{}, fmt.Errorf("--seeds %s: %w", f.seeds, err)
	}
	all := shard.Pairs(len(ss), seeds)
	if (f.seeds != "" || f.shard != "") && f.plan != "" {
		return runWork{}, errors.New("run: --plan replays one plan; it does not combine with --seeds or --shard")
	}
	if f.shard == "" {
		return runWork{pairs: all}, nil
	}
	var spec shard.Spec
	var err error
	if f.shard == "auto" {
		lookup := m.LookupEnv
		if lookup == nil {
			lookup = func(string) (string, bool) { return "", false }
		}
		spec, err = shard.FromEnv(lookup)
	} else {
		spec, err = shard.Parse(f.shard)
	}
	if err != nil {
		return runWork{}, err
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	mine := shard.Of(all, spec)
	fmt.Fprintf(cmd.ErrOrStderr(), "shard %s: %d of %d scenario × seed pairs\n", spec, len(mine), len(all))
	return runWork{pairs: mine, shard: &report.Shard{Index: spec.Index, Total: spec.Total, Scenarios: names,
		Seeds: shard.FormatSeeds(seeds), Mutant: f.mutant, Pairs: len(mine)}}, nil
}
