package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
)

// InvestigateOptions say what to do with a run that failed with a
// violation: re-run the same plan to classify it, then shrink it. Each try
// is a whole run, so both are bounded.
type InvestigateOptions struct {
	// Reruns re-run the failing plan to classify it reproducible or
	// intermittent: 0 = [DefaultReruns], negative = none.
	Reruns int
	// NoShrink skips shrinking.
	NoShrink bool
	// Budget bounds the shrinking (zero fields: [DefaultShrinkBudget]'s).
	Budget ShrinkBudget
	// SavePlan writes the shrunk plan next to the history
	// (<history>.min-plan.json), for run --plan.
	SavePlan bool
	_        struct{}
}

// DefaultReruns is how often a failing plan is re-run when
// [InvestigateOptions.Reruns] is 0.
const DefaultReruns = 2

// DefaultShrinkBudget bounds an investigation's shrinking.
var DefaultShrinkBudget = ShrinkBudget{Runs: 24, Time: 90 * time.Second}

// Investigation is what the follow-up of a failing run found.
type Investigation struct {
	// Repro is "reproducible (3/3 runs of the same plan failed)",
	// "intermittent (…)", why the run was not re-run, or "" when no re-run
	// was asked for.
	Repro string
	// Reproducible says every re-run failed too.
	Reproducible bool
	// Shrunk is the minimal failing plan (nil: not shrunk, or shrinking
	// found nothing that still fails).
	Shrunk *ShrinkResult
	// Invariant is the violated invariant the shrinking kept failing.
	Invariant string
	// PlanPath is where the shrunk plan was saved ("" = not saved).
	PlanPath string
	// Partial is the history of the re-run that ctx cut short ("" for
	// none). An interrupted investigation classifies nothing.
	Partial string
}

// Investigate classifies and shrinks a run that failed with a violation (o
// from [Runner.Run] with opts). A run that did not fail, failed without a
// violation, or ran against a user's service — which remembers the run's
// keys and effects, so a re-run would only see replays — is left alone:
// the zero Investigation, with Repro saying why for a user's service.
func (r *Runner) Investigate(ctx context.Context, o *Outcome, opts RunOptions, io InvestigateOptions) Investigation {
	var inv Investigation
	if o == nil || o.Met() || len(o.Caught()) == 0 {
		return inv
	}
	if o.Scenario.Target.URL != "" {
		inv.Repro = errNotInvestigated.Error()
		return inv
	}
	failStep := -1
	opts.Plans = map[int]Plan{}
	for i, st := range o.Steps {
		opts.Plans[i] = st.Plan
		if failStep < 0 && !st.Met {
			failStep = i
			for _, p := range st.Result.Results {
				if p.Verdict == checkers.Violated {
					inv.Invariant = p.Name
					break
				}
			}
		}
	}
	opts.Seed, opts.HistoryPath = o.Seed, ""
	if opts.Mutant == "" && o.Mutant == "" {
		opts.Mutant = CorrectService // keep re-runs on the system that failed
	}
	if reruns := io.reruns(); reruns > 0 {
		fails, ran := 1, 1
		for i := 0; i < reruns && ctx.Err() == nil; i++ {
			again, err := r.Run(ctx, o.Scenario, opts)
			if ctx.Err() != nil {
				if again != nil {
					inv.Partial = again.HistoryPath
				}
				return inv
			}
			if err != nil {
				break
			}
			ran++
			if !again.Met() {
				fails++
			}
		}
		if ctx.Err() != nil {
			return inv
		}
		inv.Reproducible = fails == ran
		kind := "reproducible"
		if !inv.Reproducible {
			kind = "intermittent"
		}
		inv.Repro = fmt.Sprintf("%s (%d/%d runs of the same plan failed)", kind, fails, ran)
	}
	if io.NoShrink || failStep < 0 || inv.Invariant == "" {
		return inv
	}
	budget := io.Budget
	budget.Runs = or(budget.Runs, DefaultShrinkBudget.Runs)
	budget.Time = or(budget.Time, DefaultShrinkBudget.Time)
	res, err := r.Shrink(ctx, o.Scenario, opts, failStep, o.Steps[failStep].Plan, inv.Invariant, budget)
	if err != nil || res.Outcome == nil {
		return inv
	}
	inv.Shrunk = &res
	if io.SavePlan && o.HistoryPath != "" {
		if path, err := SavePlan(o.HistoryPath+".min-plan.json", res.Plan); err == nil {
			inv.PlanPath = path
		}
	}
	return inv
}

// errNotInvestigated explains why a failing run against a user's service
// is not re-run or shrunk.
var errNotInvestigated = errors.New("not re-run or shrunk: your service remembers this run's keys and effects; replay against a fresh database")

func (io InvestigateOptions) reruns() int {
	switch {
	case io.Reruns < 0:
		return 0
	case io.Reruns == 0:
		return DefaultReruns
	}
	return io.Reruns
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// SavePlan writes a plan as JSON to path (what run --plan reads back and
// checks against the scenario).
func SavePlan(path string, p Plan) (string, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o644)
}
