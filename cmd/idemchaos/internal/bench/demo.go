package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/scenarios"
)

// DemoResult is the whole-demo section: what `idemchaos demo` does, run
// in-process (open the environment with a standby, the catch matrix of the
// bundled suite at seed 1, close), timed from start to finish.
type DemoResult struct {
	Runs int
	// Wall is seconds per demo.
	Wall Summary
	// OK counts the demos whose matrix was OK (reference clean, every
	// mutant caught); Notes says what went wrong in the others.
	OK    int
	Notes []string
}

func (b *bench) demo(ctx context.Context) error {
	suite, err := scenarios.Bundled()
	if err != nil {
		return err
	}
	res := &DemoResult{}
	b.rep.Demo = res
	var walls []float64
	for i := range b.opts.DemoRuns {
		start := time.Now()
		m, err := b.oneDemo(ctx, suite)
		wall := time.Since(start)
		if err != nil {
			return err
		}
		res.Runs++
		walls = append(walls, wall.Seconds())
		res.Wall = Summarize(walls)
		if m.OK() {
			res.OK++
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("run %d: %s", i+1, matrixNote(m)))
		}
		b.logf("demo %d/%d: %s, ok=%v", i+1, b.opts.DemoRuns, wall.Round(time.Millisecond), m.OK())
	}
	return nil
}

func (b *bench) oneDemo(ctx context.Context, suite []*scenarios.Scenario) (*catchmatrix.Matrix, error) {
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvLocal, Standby: true, Scenarios: suite})
	if err != nil {
		return nil, err
	}
	defer closeEnv(context.WithoutCancel(ctx))
	r.HistoryDir = b.opts.HistoryDir
	return catchmatrix.Run(ctx, r, suite, catchmatrix.Options{Seed: 1})
}

// matrixNote says why a matrix is not OK.
func matrixNote(m *catchmatrix.Matrix) string {
	var s string
	if m.Reference.Err != nil {
		s += fmt.Sprintf("the reference could not be judged (%v); ", m.Reference.Err)
	}
	for _, o := range m.Reference.Runs {
		v := verdictOf(o.Scenario.Name, o.Seed, o, nil)
		if v.Verdict != VerdictPass {
			s += fmt.Sprintf("reference %s: %s: %s (history %s); ", v.Scenario, v.Verdict, v.Reason, v.History)
		}
	}
	for _, r := range m.Mutants {
		if !r.Caught {
			s += fmt.Sprintf("mutant %s escaped; ", r.Mutant)
		}
	}
	return s
}
