package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/scenarios"
)

// DetectionResult is the detection section: every mutant of the reference
// against the bundled suite, seed after seed, each stopping at its first
// catch.
type DetectionResult struct {
	Seeds     int
	Scenarios int
	Mutants   []MutantDetection
	// Reference is the first seed's pass of the whole suite over the
	// correct reference (every run must pass).
	Reference []RunVerdict
}

// MutantDetection is one mutant's detection record.
type MutantDetection struct {
	Mutant, Pitfall, Expected string
	Seeds, Caught             int
	// Time (seconds) and Requests measure, over the seeds that caught it,
	// everything sent to the mutant until its first catch, target start-ups
	// included.
	Time, Requests Summary
	// By counts the catching scenario per seed.
	By      map[string]int
	Escapes []Escape
}

// Escape is a seed at which a mutant went uncaught.
type Escape struct {
	Seed   int64
	Reason string
}

func (b *bench) detection(ctx context.Context) error {
	suite, err := scenarios.Bundled()
	if err != nil {
		return err
	}
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvLocal, Standby: true, Scenarios: suite})
	if err != nil {
		return err
	}
	defer closeEnv(context.WithoutCancel(ctx))
	r.HistoryDir = b.opts.HistoryDir
	res := &DetectionResult{Seeds: b.opts.Seeds, Scenarios: len(suite)}
	b.rep.Detection = res
	byName := map[string]int{}
	times := map[string][]time.Duration{}
	reqs := map[string][]float64{}
	for i := range b.opts.Seeds {
		seed := int64(i + 1)
		m, err := catchmatrix.Run(ctx, r, suite, catchmatrix.Options{Seed: seed, SkipReference: i > 0,
			AfterRun: func(row *catchmatrix.Row, o *harness.Outcome) {
				if o == nil {
					return
				}
				if row.Mutant == "" {
					v := verdictOf(o.Scenario.Name, seed, o, nil)
					b.logf("detection seed %d/%d: reference %-26s %s (%d requests, %s)", seed, b.opts.Seeds, o.Scenario.Name, v.Verdict, o.Requests, o.Elapsed.Round(time.Millisecond))
					return
				}
				if c := o.Caught(); len(c) > 0 {
					b.logf("detection seed %d/%d: %-22s caught by %s in %s (%s, %d requests)", seed, b.opts.Seeds, row.Mutant,
						strings.Join(c, ", "), o.Scenario.Name, (row.Elapsed).Round(time.Millisecond), row.Requests)
				}
			}})
		if m != nil && i == 0 {
			for _, o := range m.Reference.Runs {
				res.Reference = append(res.Reference, verdictOf(o.Scenario.Name, seed, o, nil))
			}
			if m.Reference.Err != nil {
				res.Reference = append(res.Reference, RunVerdict{Scenario: "(suite)", Seed: seed, Verdict: VerdictError, Reason: m.Reference.Err.Error()})
			}
		}
		if m != nil {
			for _, row := range m.Mutants {
				k, ok := byName[row.Mutant]
				if !ok {
					k = len(res.Mutants)
					byName[row.Mutant] = k
					res.Mutants = append(res.Mutants, MutantDetection{Mutant: row.Mutant, Pitfall: row.Pitfall, Expected: row.Expected, By: map[string]int{}})
				}
				md := &res.Mutants[k]
				md.Seeds++
				if row.Caught {
					md.Caught++
					md.By[row.Scenario]++
					times[row.Mutant] = append(times[row.Mutant], row.Elapsed)
					reqs[row.Mutant] = append(reqs[row.Mutant], float64(row.Requests))
					continue
				}
				reason := fmt.Sprintf("no scenario caught it in %d runs, %d requests", len(row.Runs), row.Requests)
				if row.Err != nil {
					reason += "; error: " + row.Err.Error()
				}
				md.Escapes = append(md.Escapes, Escape{Seed: seed, Reason: reason})
				b.logf("detection seed %d/%d: %s ESCAPED: %s", seed, b.opts.Seeds, row.Mutant, reason)
			}
		}
		for k := range res.Mutants {
			md := &res.Mutants[k]
			md.Time, md.Requests = Summarize(seconds(times[md.Mutant])), Summarize(reqs[md.Mutant])
		}
		if err != nil {
			return fmt.Errorf("detection seed %d: %w", seed, err)
		}
	}
	return nil
}
