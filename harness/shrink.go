package harness

import (
	"context"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ShrinkBudget bounds a minimisation: each try is a whole run against a real
// service, so it is bounded in runs and in time.
type ShrinkBudget struct {
	Runs int           // default 40
	Time time.Duration // default 2m
	_    struct{}
}

// ShrinkResult is the smallest failing plan found.
type ShrinkResult struct {
	Plan Plan
	// From is the number of intents the failing plan had.
	From int
	// Runs is how many runs the minimisation took.
	Runs int
	// Outcome is the last failing run (of Plan).
	Outcome *Outcome
}

// Shrink minimises the plan of one step of a failing run while the
// invariant still fails: fewer intents (delta debugging), then fewer aimed
// faults and timed faults, then no start offsets, shorter spreads. Concurrent
// runs are not deterministic; a candidate counts as failing when one run of
// it fails, so the result is a plan that *can* fail this way — re-run it to
// classify it.
func (r *Runner) Shrink(ctx context.Context, s *scenarios.Scenario, opts RunOptions, step int, failing Plan, invariant string, budget ShrinkBudget) (ShrinkResult, error) {
	if budget.Runs <= 0 {
		budget.Runs = 40
	}
	if budget.Time <= 0 {
		budget.Time = 2 * time.Minute
	}
	deadline := time.Now().Add(budget.Time)
	res := ShrinkResult{Plan: failing, From: len(failing.Intents)}
	var runErr error
	fails := func(p Plan) bool {
		if res.Runs >= budget.Runs || time.Now().After(deadline) || ctx.Err() != nil || runErr != nil {
			return false
		}
		res.Runs++
		o := opts
		o.Plans = map[int]Plan{}
		for k, v := range opts.Plans {
			o.Plans[k] = v
		}
		o.Plans[step] = p
		o.HistoryPath = ""
		out, err := r.Run(ctx, s, o)
		if err != nil {
			runErr = err
			return false
		}
		if step < len(out.Steps) && violated(out.Steps[step].Result, invariant) {
			res.Outcome = out
			return true
		}
		return false
	}
	res.Plan = shrinkPlan(failing, fails)
	return res, runErr
}

func violated(r checkers.Result, invariant string) bool {
	for _, p := range r.Results {
		if p.Verdict == checkers.Violated && (invariant == "" || p.Name == invariant) {
			return true
		}
	}
	return false
}

// shrinkPlan is the pure minimisation: fails reports whether a candidate
// still fails.
func shrinkPlan(p Plan, fails func(Plan) bool) Plan {
	p.Intents = ddmin(p.Intents, func(keep []int) bool {
		c := p
		c.Intents = pick(p.Intents, keep)
		return fails(c)
	})
	// Fewer timed faults.
	for i := 0; i < len(p.Timed); {
		c := p
		c.Timed = append(append([]TimedFault(nil), p.Timed[:i]...), p.Timed[i+1:]...)
		if fails(c) {
			p = c
			continue
		}
		i++
	}
	// Fewer aimed faults and double clicks, one intent at a time.
	for i := range p.Intents {
		if len(p.Intents[i].Faults) == 0 && p.Intents[i].Clicks == 0 {
			continue
		}
		c := clonePlan(p)
		c.Intents[i].Faults, c.Intents[i].Clicks = nil, 0
		if fails(c) {
			p = c
		}
	}
	// Everything at once instead of spread out; shorter click spreads.
	c := clonePlan(p)
	changed := false
	for i := range c.Intents {
		if c.Intents[i].At != 0 || c.Intents[i].Spread > time.Millisecond {
			c.Intents[i].At, changed = 0, true
			if c.Intents[i].Spread > time.Millisecond {
				c.Intents[i].Spread = time.Millisecond
			}
		}
	}
	if changed && fails(c) {
		p = c
	}
	return p
}

// ddmin is Zeller's delta debugging over n items: it returns a smaller set
// for which fails still holds (1-minimal when the budget allows).
func ddmin[T any](items []T, fails func(keep []int) bool) []T {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	n := 2
	for len(idx) >= 2 {
		chunk := (len(idx) + n - 1) / n
		reduced := false
		for start := 0; start < len(idx); start += chunk {
			end := min(start+chunk, len(idx))
			// Try one chunk alone, then everything but the chunk.
			sub := append([]int(nil), idx[start:end]...)
			if len(sub) < len(idx) && fails(sub) {
				idx, n, reduced = sub, 2, true
				break
			}
			rest := append(append([]int(nil), idx[:start]...), idx[end:]...)
			if len(rest) > 0 && fails(rest) {
				idx, n, reduced = rest, max(n-1, 2), true
				break
			}
		}
		if !reduced {
			if n >= len(idx) {
				break
			}
			n = min(n*2, len(idx))
		}
	}
	return pick(items, idx)
}

func pick[T any](items []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out
}

func clonePlan(p Plan) Plan {
	c := p
	c.Intents = append(c.Intents[:0:0], p.Intents...)
	c.Timed = append(c.Timed[:0:0], p.Timed...)
	return c
}
