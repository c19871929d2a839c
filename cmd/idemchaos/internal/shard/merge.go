package shard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/report"
)

// Merge joins the reports of the shards of one sharded run (files names
// them, for errors) into the report one process running every pair would
// have written: the runs in the unsharded order, one verdict, one exit
// code. Anything short of every shard exactly once, each with every pair
// it was given, is an error: a missing shard must never read as a pass.
func Merge(reps []report.Report, files []string) (report.Report, error) {
	if len(reps) == 0 {
		return report.Report{}, fmt.Errorf("merge: no shard reports")
	}
	first := reps[0].Shard
	seen := map[int]string{}
	for i, r := range reps {
		name := files[i]
		if r.Tool != "idemchaos" || r.Version != report.ShapeVersion {
			return report.Report{}, fmt.Errorf("%s: not an idemchaos report of shape %d (tool %q, version %d)", name, report.ShapeVersion, r.Tool, r.Version)
		}
		s := r.Shard
		if s == nil {
			return report.Report{}, fmt.Errorf("%s: not a shard report (no \"shard\" field: was it written by run --shard i/N --json?)", name)
		}
		if s.Total != first.Total || s.Seeds != first.Seeds || s.Mutant != first.Mutant || !slices.Equal(s.Scenarios, first.Scenarios) {
			return report.Report{}, fmt.Errorf("%s: shard %d/%d of another run (scenarios %s, seeds %s, mutant %q) than %s (%d shards, scenarios %s, seeds %s, mutant %q)",
				name, s.Index, s.Total, strings.Join(s.Scenarios, ","), s.Seeds, s.Mutant, files[0], first.Total, strings.Join(first.Scenarios, ","), first.Seeds, first.Mutant)
		}
		if _, err := check(Spec{s.Index, s.Total}, "shard"); err != nil {
			return report.Report{}, fmt.Errorf("%s: %w", name, err)
		}
		if err := CheckVerdicts(r); err != nil {
			return report.Report{}, fmt.Errorf("%s: %w", name, err)
		}
		if prev, dup := seen[s.Index]; dup {
			return report.Report{}, fmt.Errorf("%s: shard %d/%d given twice (also %s)", name, s.Index, s.Total, prev)
		}
		seen[s.Index] = name
		// A shard whose command failed is no part of a whole; one whose runs
		// found the environment broken is, and the merge says so (exit 3).
		if r.Error != "" || (r.ExitCode == 3 && r.Verdict != "environment-error") {
			return report.Report{}, fmt.Errorf("%s: shard %d/%d ended in error: %s", name, s.Index, s.Total, r.Error)
		}
	}
	var missing []string
	for i := 1; i <= first.Total; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Total))
		}
	}
	if len(missing) > 0 {
		return report.Report{}, fmt.Errorf("merge: shard %s missing: the run is incomplete, no verdict", strings.Join(missing, ", "))
	}
	seeds, err := ParseSeeds(first.Seeds)
	if err != nil {
		return report.Report{}, fmt.Errorf("%s: %w", files[0], err)
	}
	if err := CheckPairs(len(first.Scenarios), len(seeds)); err != nil {
		return report.Report{}, fmt.Errorf("%s: %w", files[0], err)
	}
	all := Pairs(len(first.Scenarios), seeds)
	byIndex := make([]*report.Report, first.Total)
	for i := range reps {
		byIndex[reps[i].Shard.Index-1] = &reps[i]
	}
	for k, r := range byIndex {
		want := Of(all, Spec{Index: k + 1, Total: first.Total})
		name := seen[k+1]
		if r.Verdict == "environment-error" && r.Shard.Pairs == len(want) && len(r.Runs) < len(want) {
			// run stops a sweep at its first environment error: the shard
			// is whole as far as it could go, and its verdict is the merge's.
			return report.Report{}, fmt.Errorf("%s: shard %d/%d stopped at an environment error after %d of its %d pairs: %s", name, k+1, first.Total, len(r.Runs), len(want), environmentCause(r))
		}
		if r.Shard.Pairs != len(want) || len(r.Runs) != len(want) {
			return report.Report{}, fmt.Errorf("%s: shard %d/%d ran %d of its %d pairs: cut short, no verdict", name, k+1, first.Total, len(r.Runs), len(want))
		}
		for j, p := range want {
			run := r.Runs[j]
			if run.Scenario != first.Scenarios[p.Scenario] || run.Seed != p.Seed {
				return report.Report{}, fmt.Errorf("%s: shard %d/%d run %d is %s seed %d, want %s seed %d", name, k+1, first.Total, j+1,
					run.Scenario, run.Seed, first.Scenarios[p.Scenario], p.Seed)
			}
		}
	}
	runs := make([]report.Run, 0, len(all))
	for p := range all {
		runs = append(runs, byIndex[p%first.Total].Runs[p/first.Total])
	}
	out := report.New(runs)
	for k := range byIndex {
		out.Merged = append(out.Merged, seen[k+1])
	}
	return out, nil
}

// runVerdicts are the words a run and a step are judged with, and
// invariantVerdicts an invariant's: a report with another word (a typo,
// a hand edit, "banana") is not a report of idemchaos's, and merging it
// would decide on a verdict no check gave.
var (
	runVerdicts       = []string{"pass", "violation", "unknown", "environment-error"}
	invariantVerdicts = []string{"pass", "violation", "unknown", "environment-error", report.NotExercised}
)

// CheckVerdicts checks every verdict word of r: the report's, its runs',
// their steps' and their invariants'.
func CheckVerdicts(r report.Report) error {
	bad := func(where, v string, words []string) error {
		return fmt.Errorf("%s: verdict %q is not one of %s", where, v, strings.Join(words, ", "))
	}
	if !slices.Contains(runVerdicts, r.Verdict) {
		return bad("the report", r.Verdict, runVerdicts)
	}
	for i, run := range r.Runs {
		where := fmt.Sprintf("run %d (%s seed %d)", i+1, run.Scenario, run.Seed)
		if !slices.Contains(runVerdicts, run.Verdict) {
			return bad(where, run.Verdict, runVerdicts)
		}
		for j, st := range run.Steps {
			if !slices.Contains(runVerdicts, st.Verdict) {
				return bad(fmt.Sprintf("%s step %d", where, j+1), st.Verdict, runVerdicts)
			}
			for _, iv := range st.Invariants {
				if !slices.Contains(invariantVerdicts, iv.Verdict) {
					return bad(fmt.Sprintf("%s step %d invariant %s", where, j+1, iv.Name), iv.Verdict, invariantVerdicts)
				}
			}
		}
	}
	return nil
}

// environmentCause is the first environment error a shard's runs name.
func environmentCause(r *report.Report) string {
	for _, run := range r.Runs {
		if run.Verdict == "environment-error" {
			if why := run.EnvironmentReason(); why != "" {
				return why
			}
		}
	}
	return "the environment failed"
}
