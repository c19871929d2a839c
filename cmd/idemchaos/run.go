package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/oracle"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

type runFlags struct {
	files       []string
	target      string
	allowRemote bool
	dbAddr      string
	dbListen    string
	toxiproxy   string
	envKind     string
	seed        int64
	mutant      string
	plan        string
	reruns      int
	shrink      bool
	out         outputFlags
}

func (m *Main) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run -s FILE [-s FILE...] [FILE...]",
		Short: "Run scenarios against the reference or your own service; exit 1 on a violation",
		Long: `run executes each scenario: it starts the target (the bundled reference, or your
service given by --target behind idemchaos's own fault proxy), generates the plan
from the seed, makes the faults happen while the clients send traffic, reads the
effects and checks the invariants.

A failing run against the reference is re-run to classify it (reproducible or
intermittent), then shrunk to a minimal plan. Your own service remembers a run's
keys and effects, so a run against it is not re-run or shrunk. The report prints
the seed and the command that replays it.

Scenario files may also follow the flags (run -s idemchaos/*.yaml expands to
several files).

Exit codes: 0 every expectation held, 1 a violation, 2 inconclusive, 3 usage,
configuration or environment error (invalid scenario, unreachable or non-loopback
target, failing oracle, missing hook).`,
		Example: `  idemchaos run -s scenarios/response-drop-replay.yaml
  idemchaos run -s scenarios/double-click-exactly-once.yaml --mutant check-then-insert
  idemchaos run -s my-api.yaml --target http://127.0.0.1:8080 --junit report.xml --report report.html
  idemchaos run -s scenarios/key-reuse.yaml --seed 42 --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.files = append(f.files, args...)
			if len(f.files) == 0 {
				return usageError(errors.New("run: name at least one scenario file: -s FILE"))
			}
			return m.runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "scenario", "s", nil, "scenario file (repeatable)")
	fl.StringVar(&f.target, "target", m.env("TARGET", ""), "your service's base URL; overrides the scenarios' targets (env IDEMCHAOS_TARGET)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a target that is not on a loopback address")
	fl.StringVar(&f.dbAddr, "db-addr", "", "with --target: your service's database host:port, proxied so DB faults work")
	fl.StringVar(&f.dbListen, "db-listen", "", "with --db-addr: where the database proxy listens (point your service there; default a free port)")
	fl.StringVar(&f.toxiproxy, "toxiproxy", m.env("TOXIPROXY", ""), "drive this toxiproxy-server API instead of the in-process Toxiproxy (env IDEMCHAOS_TOXIPROXY)")
	fl.StringVar(&f.envKind, "env", m.env("ENV", "auto"), "environment: auto, local, external or docker (env IDEMCHAOS_ENV)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the generated plans: the same seed replays the same plan")
	fl.StringVar(&f.mutant, "mutant", "", "run the reference with this mutant (see idemchaos reference mutants)")
	fl.StringVar(&f.plan, "plan", "", "replay a saved plan (JSON, as written next to a shrunk failure's history)")
	fl.IntVar(&f.reruns, "reruns", 2, "re-runs of a failing plan to classify it reproducible or intermittent")
	fl.BoolVar(&f.shrink, "shrink", true, "shrink a failing plan to a minimal one")
	f.out.register(fl)
	return cmd
}

func (m *Main) runRun(cmd *cobra.Command, f runFlags) error {
	kind, err := env.ParseKind(f.envKind)
	if err != nil {
		return usageError(err)
	}
	if err := knownMutant(f.mutant); err != nil {
		return usageError(err)
	}
	ss, err := loadScenarios(f.files)
	if err != nil {
		return usageError(err)
	}
	targetURL := f.target
	if targetURL != "" {
		for _, s := range ss {
			if err := retarget(s, f.target, f.allowRemote); err != nil {
				return usageError(err)
			}
		}
	} else if targetURL, err = sharedTargetURL(ss); err != nil {
		return usageError(err)
	}
	var plans map[int]harness.Plan
	if f.plan != "" {
		p, err := readPlan(f.plan)
		if err != nil {
			return usageError(err)
		}
		plans = map[int]harness.Plan{0: p}
	}
	ctx := cmd.Context()
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: kind, TargetURL: targetURL, AllowRemote: f.allowRemote,
		DatabaseAddr: f.dbAddr, DatabaseListen: f.dbListen, ToxiproxyURL: f.toxiproxy, Scenarios: ss, Standby: f.mutant == "replica-read"})
	if err != nil {
		return usageError(err)
	}
	defer closeEnv(context.WithoutCancel(ctx))
	if r.External != nil && r.External.DatabaseProxyAddr() != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "database proxy %s → %s (point your service's DSN at it for database faults)\n", r.External.DatabaseProxyAddr(), f.dbAddr)
	}
	for _, s := range ss {
		if err := checkOracle(ctx, s); err != nil {
			return usageError(err)
		}
	}
	prog := m.newProgress(cmd.ErrOrStderr())
	r.OnEvent = prog.event
	r.HistoryDir = historyDirFor(f.out.history)
	var runs []report.Run
	var outcomes []*harness.Outcome
	for _, s := range ss {
		prog.start(s.Name, f.mutant)
		o, err := r.Run(ctx, s, harness.RunOptions{Seed: f.seed, Mutant: f.mutant, Plans: plans})
		prog.done()
		if err != nil {
			if o != nil && o.HistoryPath != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "partial history kept: %s\n", o.HistoryPath)
			}
			if ctx.Err() != nil {
				return errInterrupted()
			}
			return usageError(oneLineError{fmt.Errorf("%s: %w", s.Name, err)})
		}
		run := report.FromOutcome(o)
		run.Replay += f.replayFlags()
		switch {
		case o.Met() || (f.reruns == 0 && !f.shrink) || len(o.Caught()) == 0:
			// Nothing to classify or shrink without a violation.
		case s.Target.URL != "":
			// The plan's keys depend on the seed only, and the user's
			// service keeps its records and effects between runs: a re-run
			// would get replays and re-read this run's effects, so it would
			// "fail" whatever the service does, and shrinking would shrink
			// to nothing real.
			run.Repro = "not re-run or shrunk: your service remembers this run's keys and effects; replay against a fresh database"
		default:
			m.investigate(ctx, cmd, r, s, o, f, &run)
			if ctx.Err() != nil {
				// A classification from re-runs cut short would be a guess.
				fmt.Fprintf(cmd.ErrOrStderr(), "history kept: %s\n", o.HistoryPath)
				return errInterrupted()
			}
		}
		runs = append(runs, run)
		outcomes = append(outcomes, o)
	}
	rep := report.New(runs)
	if err := f.out.write(cmd, rep, outcomes); err != nil {
		return err
	}
	return exitFor(rep)
}

// investigate re-runs a failing plan to classify it, then shrinks it.
func (m *Main) investigate(ctx context.Context, cmd *cobra.Command, r *harness.Runner, s *scenarios.Scenario, o *harness.Outcome, f runFlags, run *report.Run) {
	plans := map[int]harness.Plan{}
	failStep, invariant := -1, ""
	for i, st := range o.Steps {
		plans[i] = st.Plan
		if failStep < 0 && !st.Met {
			failStep = i
			for _, p := range st.Result.Results {
				if p.Verdict == checkers.Violated {
					invariant = p.Name
					break
				}
			}
		}
	}
	opts := harness.RunOptions{Seed: o.Seed, Mutant: f.mutant, Plans: plans}
	if f.reruns > 0 {
		fails := 1
		for i := 0; i < f.reruns; i++ {
			again, err := r.Run(ctx, s, opts)
			if ctx.Err() != nil {
				if again != nil && again.HistoryPath != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "partial history kept: %s\n", again.HistoryPath)
				}
				return
			}
			if err != nil {
				break
			}
			if !again.Met() {
				fails++
			}
		}
		kind := "reproducible"
		if fails <= f.reruns {
			kind = "intermittent"
		}
		run.Repro = fmt.Sprintf("%s (%d/%d runs of the same plan failed)", kind, fails, f.reruns+1)
	}
	if f.shrink && failStep >= 0 && invariant != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "shrinking the failing plan of %s (%s)…\n", s.Name, invariant)
		res, err := r.Shrink(ctx, s, opts, failStep, o.Steps[failStep].Plan, invariant, harness.ShrinkBudget{Runs: 24, Time: 90 * time.Second})
		if err == nil && res.Outcome != nil {
			run.Shrunk = &report.Shrunk{From: res.From, To: len(res.Plan.Intents), Runs: res.Runs, Plan: res.Plan.Describe()}
			if path, err := savePlan(o.HistoryPath, res.Plan); err == nil {
				run.Shrunk.Plan += fmt.Sprintf("saved: %s\nreplay it: idemchaos run -s %s --plan %s", path, s.File, path)
				if f.mutant != "" {
					run.Shrunk.Plan += " --mutant " + f.mutant
				}
				f.plan = ""
				run.Shrunk.Plan += f.replayFlags()
				run.Shrunk.Plan += "\n"
			}
		}
	}
}

// replayFlags are the flags besides the scenario, seed and mutant that a
// replay of this run needs: without --target a replay would go to the
// scenario's own URL, not to the service that was tested.
func (f runFlags) replayFlags() string {
	var b strings.Builder
	if f.target != "" {
		b.WriteString(" --target " + f.target)
	}
	if f.allowRemote {
		b.WriteString(" --allow-remote")
	}
	if f.dbAddr != "" {
		b.WriteString(" --db-addr " + f.dbAddr)
	}
	if f.plan != "" {
		b.WriteString(" --plan " + f.plan)
	}
	return b.String()
}

// checkOracle reads the effects once before any traffic is sent, so that a
// wrong DSN, URL or query is reported up front, and not after the run has
// already written to the user's service.
func checkOracle(ctx context.Context, s *scenarios.Scenario) error {
	var o oracle.Oracle
	switch s.Effects.Oracle {
	case "sql":
		o = oracle.SQL(s.Effects.DSN, s.Effects.Query)
	case "http":
		o = oracle.HTTP(s.Effects.URL, s.Effects.Items, s.Effects.Tenant, s.Effects.Key, s.Effects.ID)
	default:
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := o.Effects(ctx); err != nil {
		return oneLineError{fmt.Errorf("%s: %w", s.Name, err)}
	}
	return nil
}

// oneLineError prints a multi-line error (pgconn lists every address it
// tried, one per line) as one line, dropping repeated lines.
type oneLineError struct{ err error }

func (e oneLineError) Error() string {
	var parts []string
	for _, l := range strings.Split(e.err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

func (e oneLineError) Unwrap() error { return e.err }

func loadScenarios(files []string) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	var errs []error
	for _, f := range files {
		s, err := scenarios.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// sharedTargetURL is the url the scenarios' targets name, for a run without
// --target: one run talks to one external service (behind one proxy), or
// to the local reference.
func sharedTargetURL(ss []*scenarios.Scenario) (string, error) {
	var want, first string
	reference := ""
	for _, s := range ss {
		switch {
		case s.Target.URL == "":
			reference = s.Name
		case want == "":
			want, first = s.Target.URL, s.Name
		case s.Target.URL != want:
			return "", fmt.Errorf("%s targets %s but %s targets %s: run them separately, or pass --target", first, want, s.Name, s.Target.URL)
		}
	}
	if want != "" && reference != "" {
		return "", fmt.Errorf("%s targets %s but %s targets the reference: run them separately", first, want, reference)
	}
	return want, nil
}

// retarget points a scenario at the user's service and checks that what it
// asks for can be done there.
func retarget(s *scenarios.Scenario, target string, allowRemote bool) error {
	s.Target = scenarios.Target{URL: target, AllowRemote: allowRemote || s.Target.AllowRemote}
	if s.Effects.Oracle == "reference" {
		s.Effects.Oracle = "none"
	}
	need := map[string][2]string{
		"crash":            {s.Hooks.Kill, s.Hooks.Restart},
		"consumer-restart": {s.Hooks.KillConsumer, s.Hooks.RestartConsumer},
	}
	for _, st := range s.EffectiveSteps() {
		specs := st.Faults
		if specs == nil && len(s.Steps) == 0 {
			specs = s.Faults
		}
		for _, fs := range specs {
			if h, ok := need[fs.Kind]; ok && (h[0] == "" || h[1] == "") {
				return fmt.Errorf("%s: %s on an external target needs hooks (kill and restart commands) in the scenario", s.Name, fs.Kind)
			}
			if fs.Kind == "replica-lag" && s.Hooks.ReplicaDelay == "" {
				return fmt.Errorf("%s: replica-lag on an external target needs hooks.replica_delay", s.Name)
			}
		}
	}
	return nil
}

func readPlan(path string) (harness.Plan, error) {
	var p harness.Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read plan: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("read plan %s: %w", path, err)
	}
	return p, nil
}

func savePlan(historyPath string, p harness.Plan) (string, error) {
	path := historyPath + ".min-plan.json"
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o644)
}

func exitFor(rep report.Report) error {
	if rep.ExitCode == 0 {
		return nil
	}
	return &ExitError{Code: rep.ExitCode}
}

// knownMutant refuses a mutant name before anything starts, suggesting the
// closest one.
func knownMutant(name string) error {
	if name == "" || name == harness.CorrectService {
		return nil
	}
	var names []string
	best, bestDist := "", 1<<30
	for _, m := range reference.Mutants() {
		if m.Name == name {
			return nil
		}
		names = append(names, m.Name)
		if d := editDistance(name, m.Name); d < bestDist {
			best, bestDist = m.Name, d
		}
	}
	hint := ""
	if bestDist <= 3 {
		hint = fmt.Sprintf("; did you mean %q?", best)
	}
	return fmt.Errorf("unknown mutant %q%s (known: %s)", name, hint, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance, for suggestions.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
