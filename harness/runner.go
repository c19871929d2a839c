package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/addrgate"
	"github.com/idemchaos/idemchaos/internal/ctxwait"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ErrSetup is wrapped by errors that stopped a run before it could judge
// anything: the target did not start, a fault is unsupported, the oracle
// could not be read. They are environment errors, not verdicts.
var ErrSetup = errors.New("run setup")

// Runner runs scenarios in one environment; [Open] starts it.
type Runner struct {
	// HistoryDir keeps one history file per run ("" = the system temp dir).
	HistoryDir string
	// OnEvent sees every event recorded (progress displays). Must not block.
	OnEvent func(*history.Event)

	env  sut.Environment
	kind EnvKind
	// addrs is the address gate [Open] checked the environment with; the
	// oracles and the driver connect through it (nil: loopback only).
	addrs *addrgate.Gate
	_     struct{}
}

// RunOptions say how to run one scenario.
type RunOptions struct {
	Seed int64
	// Mutant overrides the reference target's mutant; "" keeps the
	// scenario's, and [CorrectService] forces the correct service.
	Mutant string
	// Plans replaces generated plans (by step index), to replay or shrink.
	Plans map[int]Plan
	// HistoryPath names the history file ("" = a new file in HistoryDir).
	HistoryPath string
	// Invocation is how the run was started, for its replay command.
	Invocation Invocation
	// Expect, when set, is the invariant the last step expects violated
	// instead of its own expectation (the Go API's [Step.ExpectViolation]);
	// the history records it, so a later check judges the step alike.
	Expect string
	_      struct{}
}

// CorrectService as [RunOptions.Mutant] runs the reference without a mutant.
const CorrectService = "none"

// StepOutcome is what one step did and found.
type StepOutcome struct {
	Name   string
	Expect string // "clean" or an invariant name
	Plan   Plan
	Stats  driver.Stats
	Result checkers.Result
	// Met says the step's expectation held.
	Met bool
}

// Outcome is the result of running a scenario once.
type Outcome struct {
	Scenario    *scenarios.Scenario
	Seed        int64
	Mutant      string
	Steps       []StepOutcome
	HistoryPath string
	History     *history.History
	Requests    int64
	Elapsed     time.Duration
	// Invocation is how the run was started (see [RunOptions]).
	Invocation Invocation
}

// Verdict is the worst verdict over the steps' checks.
func (o *Outcome) Verdict() checkers.Verdict {
	v := checkers.Pass
	for _, s := range o.Steps {
		v = max(v, s.Result.Verdict)
	}
	return v
}

// Environment is the reason the run is an environment error (the harness
// could not do its job: its history says why), "" when it is not.
func (o *Outcome) Environment() string {
	for _, s := range o.Steps {
		if s.Result.Verdict == checkers.EnvironmentError {
			return s.Result.Reason
		}
	}
	return ""
}

// Met says every step's expectation held.
func (o *Outcome) Met() bool {
	for _, s := range o.Steps {
		if !s.Met {
			return false
		}
	}
	return len(o.Steps) > 0
}

// ReplayCommand is the exact command that replays this run: the same
// scenario, environment, seed, mutant and flags give the same plan (see
// [ReplayCommand]).
func (o *Outcome) ReplayCommand() string {
	return ReplayCommand(o.Scenario, o.Seed, o.Mutant, o.Invocation)
}

// Caught lists the invariants violated in any step, in canonical order.
func (o *Outcome) Caught() []string {
	seen := map[string]bool{}
	for _, s := range o.Steps {
		for _, r := range s.Result.Results {
			if r.Verdict == checkers.Violated {
				seen[r.Name] = true
			}
		}
	}
	var out []string
	for _, n := range checkers.Names() {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// Run runs the scenario once: resolve every step before anything starts,
// start the target, then send each step's plan with its faults and read
// the effects; then judge the history it wrote, as an offline check of
// that file would ([checkers.Judge]). The history file is kept whatever
// happens, including when ctx is cancelled; an error after it was begun
// is written into it as the environment's.
func (r *Runner) Run(ctx context.Context, s *scenarios.Scenario, opts RunOptions) (_ *Outcome, err error) {
	defer func() { err = r.environmentError(ctx, err) }()
	if s.Broker != nil {
		return r.runConsumer(ctx, s, opts)
	}
	start := time.Now()
	rp, err := r.resolve(s, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	out := &Outcome{Scenario: s, Seed: opts.Seed, Mutant: rp.mutant, Invocation: rp.invocation}
	t, err := r.env.StartTarget(ctx, rp.target)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer t.Close(context.WithoutCancel(ctx))
	ses, err := r.openSession(rp, t, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	defer ses.close(ctx)
	// What stopped the run is the environment's fault, and the history
	// says so: a later check of it says the same, never a verdict.
	defer func() {
		if err = r.environmentError(ctx, err); err != nil && ctx.Err() == nil {
			ses.environment(err.Error())
		}
	}()
	out.HistoryPath = ses.path
	var prev Plan
	for i := range rp.steps {
		st := &rp.steps[i]
		if err := ses.begin(st); err != nil {
			return out, err
		}
		if st.wait > 0 && !ctxwait.Sleep(ctx, st.wait) {
			break
		}
		plan, err := ses.plan(st, prev)
		if err != nil {
			return out, err
		}
		prev = plan
		stats, err := ses.step(ctx, st, plan)
		out.Requests += stats.Requests
		if err != nil {
			return out, err
		}
		out.Steps = append(out.Steps, StepOutcome{Name: st.name, Expect: st.expect, Plan: plan, Stats: stats})
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		out.Elapsed = time.Since(start)
		return out, ctx.Err()
	}
	if out.History, err = ses.judged(); err != nil {
		return out, err
	}
	j := checkers.Judge(out.History, rp.checker, rp.judge...)
	for i := range min(len(out.Steps), len(j.Steps)) { // one step event per step run
		out.Steps[i].Result, out.Steps[i].Met = j.Steps[i].Result, j.Steps[i].Met
	}
	out.Elapsed = time.Since(start)
	return out, nil
}
