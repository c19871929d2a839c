package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// StormScenario is the scenario the false-alarm section runs: every fault
// at once.
const StormScenario = "storm"

// FalseAlarmResult is the false-alarm section: the correct reference
// against storm, seed after seed.
type FalseAlarmResult struct {
	Scenario string
	// Seeds counts the runs made; Pass, Violations and Inconclusive
	// (inconclusive checks and runs that could not be judged) split them.
	Seeds, Pass, Violations, Inconclusive int
	// Bad lists every run that did not pass, with its reason and history.
	Bad []RunVerdict
	// Time (seconds per run) and Requests (per run).
	Time, Requests Summary
}

func (b *bench) falseAlarms(ctx context.Context) error {
	suite, err := scenarios.Bundled()
	if err != nil {
		return err
	}
	var storm *scenarios.Scenario
	for _, s := range suite {
		if s.Name == StormScenario {
			storm = s
		}
	}
	if storm == nil {
		return fmt.Errorf("the bundled suite has no %s scenario", StormScenario)
	}
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: harness.EnvLocal, Standby: true, Scenarios: []*scenarios.Scenario{storm}})
	if err != nil {
		return err
	}
	defer closeEnv(context.WithoutCancel(ctx))
	r.HistoryDir = b.opts.HistoryDir
	res := &FalseAlarmResult{Scenario: storm.Name}
	b.rep.FalseAlarms = res
	var times []time.Duration
	var reqs []float64
	for i := range b.opts.StormSeeds {
		seed := int64(i + 1)
		o, err := r.Run(ctx, storm, harness.RunOptions{Seed: seed, Mutant: harness.CorrectService})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v := verdictOf(storm.Name, seed, o, err)
		res.Seeds++
		switch v.Verdict {
		case VerdictPass:
			res.Pass++
		case VerdictViolation:
			res.Violations++
		default:
			res.Inconclusive++
		}
		if v.Verdict != VerdictPass {
			res.Bad = append(res.Bad, v)
		}
		times = append(times, v.Elapsed)
		reqs = append(reqs, float64(v.Requests))
		res.Time, res.Requests = Summarize(seconds(times)), Summarize(reqs)
		line := fmt.Sprintf("false-alarms seed %d/%d: %s (%d requests, %s)", seed, b.opts.StormSeeds, v.Verdict, v.Requests, v.Elapsed.Round(time.Millisecond))
		if v.Verdict != VerdictPass {
			line += ": " + v.Reason + " (history " + v.History + ")"
		}
		b.logf("%s", line)
	}
	return nil
}
