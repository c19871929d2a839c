package bench

import (
	"context"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/env"
)

// StartupResult is the environment start-up section: harness.Open of the
// local environment from nothing (a new run directory, so initdb
// included), as every `idemchaos demo` or `run` pays it, and its close.
// Times are seconds.
type StartupResult struct {
	Runs int
	// Primary is a Postgres primary and the in-process Toxiproxy;
	// PrimaryStandby adds a streaming hot standby.
	Primary, PrimaryStandby Summary
	// Close is the teardown of either (stop, remove the directories).
	Close Summary
}

func (b *bench) startup(ctx context.Context) error {
	res := &StartupResult{}
	b.rep.Startup = res
	var prim, both, closes []float64
	for i := range b.opts.StartupRepeats {
		for _, standby := range []bool{false, true} {
			start := time.Now()
			_, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: env.KindLocal, Standby: standby})
			if err != nil {
				return err
			}
			open := time.Since(start)
			start = time.Now()
			if err := closeEnv(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			closes = append(closes, time.Since(start).Seconds())
			if standby {
				both = append(both, open.Seconds())
			} else {
				prim = append(prim, open.Seconds())
			}
			b.logf("startup %d/%d: standby=%v open %s", i+1, b.opts.StartupRepeats, standby, open.Round(time.Millisecond))
		}
		res.Runs = i + 1
		res.Primary, res.PrimaryStandby, res.Close = Summarize(prim), Summarize(both), Summarize(closes)
	}
	return nil
}
