package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	_          struct{}
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
// start the target, then send each step's plan with its faults, read the
// effects and check. The history file is kept whatever happens, including
// when ctx is cancelled.
func (r *Runner) Run(ctx context.Context, s *scenarios.Scenario, opts RunOptions) (*Outcome, error) {
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
	out.HistoryPath = ses.path
	var prev Plan
	for i := range rp.steps {
		st := &rp.steps[i]
		if st.wait > 0 && !ctxwait.Sleep(ctx, st.wait) {
			break
		}
		plan, err := ses.plan(st, prev)
		if err != nil {
			return out, err
		}
		prev = plan
		stats, h, err := ses.step(ctx, st, plan)
		out.Requests += stats.Requests
		if err != nil {
			return out, err
		}
		out.History = h
		so := StepOutcome{Name: st.name, Expect: st.expect, Plan: plan, Stats: stats}
		so.Result = rp.checker.Check(h, h.Effects)
		if why := nothingSucceeded(h); why != "" && so.Result.Verdict == checkers.Pass {
			// Every check passes vacuously when nothing executed: a wrong
			// path, body or token must not read as a clean service.
			so.Result.Verdict, so.Result.Reason = checkers.Unknown, why
		}
		if stats.Budget && so.Result.Verdict == checkers.Pass {
			// Attempts the budget stopped were never judged: a pass on
			// the part that ran would claim more than the run knows.
			so.Result.Verdict, so.Result.Reason = checkers.Unknown, fmt.Sprintf(
				"the request budget ran out (max_requests %d) before every intent was sent and retried; raise traffic.max_requests", st.traffic.MaxRequests)
		}
		so.Met = expectationMet(so.Expect, so.Result)
		out.Steps = append(out.Steps, so)
		if ctx.Err() != nil {
			break
		}
	}
	out.Elapsed = time.Since(start)
	return out, ctx.Err()
}

// expectationMet: "clean" wants no violation and no unknown; an invariant
// name wants that invariant violated.
func expectationMet(expect string, r checkers.Result) bool {
	if expect == "clean" {
		return r.Verdict == checkers.Pass
	}
	for _, p := range r.Results {
		if p.Name == expect && p.Verdict == checkers.Violated {
			return true
		}
	}
	return false
}

// nothingSucceeded explains a history in which no attempt got a 2xx, or
// returns "". Such a run proves nothing about idempotency.
func nothingSucceeded(h *history.History) string {
	if len(h.Attempts) == 0 {
		return "no request was sent"
	}
	statuses := map[string]int{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Outcome == history.OK && a.Status/100 == 2 {
			return ""
		}
		k := a.Outcome.String()
		if a.Outcome == history.OK {
			k = strconv.Itoa(a.Status)
		}
		statuses[k]++
	}
	keys := make([]string, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", statuses[k], k)
	}
	return fmt.Sprintf("no request succeeded (%s), so nothing was judged: check the endpoint's path, body and tokens", strings.Join(parts, ", "))
}
