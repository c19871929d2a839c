package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

// maxReruns bounds --reruns: each re-run is a whole run of the plan.
const maxReruns = 100

type runFlags struct {
	files       []string
	target      string
	allowRemote bool
	dbAddr      string
	dbListen    string
	toxiproxy   string
	// pgImage and toxiproxyImage choose the docker environment's images.
	pgImage, toxiproxyImage string
	envKind                 string
	seed                    int64
	mutant                  string
	plan                    string
	reruns                  int
	shrink                  bool
	seeds                   string
	shard                   string
	contract                contractFlags
	out                     outputFlags
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

--seeds 1-400 runs every scenario with every seed; --shard i/N runs only
shard i of N of those scenario × seed pairs (a CI matrix, a Kubernetes
Indexed Job: --shard auto reads their variables), and merge joins the
shards' --json reports into one verdict.

Scenario files may also follow the flags (run -s idemchaos/*.yaml expands to
several files).

Exit codes: 0 every expectation held, 1 a violation, 2 nothing to judge or
inconclusive, 3 usage, configuration or environment error (invalid scenario,
unreachable or non-loopback target, failing oracle or one that read nothing,
missing hook, dead harness database, full disk, a target that answered none of
the run's attempts). An environment error is written into the history, so
check of it says the same.`,
		Example: `  idemchaos run -s scenarios/response-drop-replay.yaml
  idemchaos run -s scenarios/double-click-exactly-once.yaml --mutant check-then-insert
  idemchaos run -s my-api.yaml --target http://127.0.0.1:8080 --junit report.xml --report report.html
  idemchaos run -s scenarios/key-reuse.yaml --seed 42 --json
  idemchaos run -s scenarios/key-reuse.yaml --seeds 1-400 --shard 2/4 --history h/ --json > shard-2.json`,
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
	f.contract.register(fl, m.env("PROFILE", ""))
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow addresses that are not loopback: the target, --db-addr, --db-listen, --toxiproxy, the oracle's effects.dsn and effects.url (a scenario's target.allow_remote needs this flag)")
	fl.StringVar(&f.dbAddr, "db-addr", "", "with --target: your service's database host:port, proxied so DB faults work")
	fl.StringVar(&f.dbListen, "db-listen", "", "with --db-addr: where the database proxy listens (point your service there; default a free port)")
	fl.StringVar(&f.toxiproxy, "toxiproxy", m.env("TOXIPROXY", ""), "drive this toxiproxy-server API instead of the in-process Toxiproxy (env IDEMCHAOS_TOXIPROXY)")
	fl.StringVar(&f.envKind, "env", m.env("ENV", "auto"), "environment: auto, local, external or docker (env IDEMCHAOS_ENV)")
	fl.StringVar(&f.pgImage, "pg-image", m.env("PG_IMAGE", ""), "with --env docker: the Postgres image (default postgres:16 if present, else idemchaos/postgres:local; env IDEMCHAOS_PG_IMAGE)")
	fl.StringVar(&f.toxiproxyImage, "toxiproxy-image", m.env("TOXIPROXY_IMAGE", ""), "with --env docker: the toxiproxy-server image (default ghcr.io/shopify/toxiproxy:2.12.0 if present, else idemchaos/toxiproxy:local; env IDEMCHAOS_TOXIPROXY_IMAGE)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the generated plans: the same seed replays the same plan")
	fl.StringVar(&f.mutant, "mutant", "", "run the reference with this mutant (see idemchaos reference mutants)")
	fl.StringVar(&f.plan, "plan", "", "replay a saved plan (JSON, as written next to a shrunk failure's history)")
	fl.StringVar(&f.seeds, "seeds", "", "run every scenario with each of these seeds: 1-400, or 1-5,9")
	fl.StringVar(&f.shard, "shard", m.env("SHARD", ""), "run only shard i/N of the scenario × seed pairs (1-based), or auto: from JOB_COMPLETION_INDEX+IDEMCHAOS_SHARD_TOTAL, CI_NODE_INDEX+CI_NODE_TOTAL, CIRCLE_NODE_*, BUILDKITE_PARALLEL_JOB*; join the --json reports with merge (env IDEMCHAOS_SHARD)")
	fl.IntVar(&f.reruns, "reruns", 2, "re-runs of a failing plan to classify it reproducible or intermittent")
	fl.BoolVar(&f.shrink, "shrink", true, "shrink a failing plan to a minimal one")
	f.out.register(fl)
	fl.BoolVarP(&f.out.verbose, "verbose", "v", false, "with --seeds: print every seed's line, not only the failures'")
	return cmd
}

func (m *Main) runRun(cmd *cobra.Command, f runFlags) error {
	kind, err := harness.ParseEnvKind(f.envKind)
	if err != nil {
		return usageError(err)
	}
	if err := checkMutant(f.mutant); err != nil {
		return usageError(err)
	}
	if f.reruns < 0 || f.reruns > maxReruns {
		return usageError(fmt.Errorf("--reruns %d: want 0 (no re-runs) to %d", f.reruns, maxReruns))
	}
	ss, err := loadScenarios(f.files)
	if err != nil {
		return usageError(err)
	}
	if err := f.contract.override(ss); err != nil {
		return usageError(err)
	}
	targetURL := f.target
	// What --target changed besides the target is said once the
	// environment accepted the scenarios, not before a refusal.
	var notes []string
	if targetURL != "" {
		for _, s := range ss {
			notes = append(notes, retarget(s, f.target, f.allowRemote)...)
		}
	} else if targetURL, err = oneTarget(ss); err != nil {
		return usageError(err)
	}
	work, err := m.pairsOf(cmd, f, ss)
	if err != nil {
		return usageError(err)
	}
	var plans map[int]harness.Plan
	if f.plan != "" {
		p, err := readPlan(f.plan, ss)
		if err != nil {
			return usageError(err)
		}
		plans = map[int]harness.Plan{0: p}
	}
	f.out.dir = f.seeds != "" || work.shard != nil
	f.out.seeds = f.seeds != ""
	if err := f.out.check(len(work.pairs)); err != nil {
		return usageError(err)
	}
	if len(work.pairs) == 0 {
		// A shard past the last pair: nothing to start, still a report
		// that says which shard it was, so the merge finds it.
		rep := report.New(nil)
		rep.Shard = work.shard
		if err := f.out.write(cmd, rep, nil); err != nil {
			return err
		}
		return exitFor(rep)
	}
	ctx := cmd.Context()
	r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: kind, TargetURL: targetURL, AllowRemote: f.allowRemote,
		DatabaseAddr: f.dbAddr, DatabaseListen: f.dbListen, ToxiproxyURL: f.toxiproxy, Scenarios: ss, Mutants: []string{f.mutant},
		PGImage: f.pgImage, ToxiproxyImage: f.toxiproxyImage})
	if err != nil {
		return usageError(err)
	}
	defer closeEnv(context.WithoutCancel(ctx))
	for _, n := range notes {
		fmt.Fprintln(cmd.ErrOrStderr(), n)
	}
	if addr := r.DatabaseProxyAddr(); addr != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "database proxy %s → %s (point your service's DSN at it for database faults)\n", addr, f.dbAddr)
	}
	for _, s := range ss {
		if err := checkOracle(ctx, s, f.allowRemote); err != nil {
			return usageError(oneLineError{err})
		}
	}
	prog := m.newProgress(cmd.ErrOrStderr())
	r.OnEvent = prog.event
	r.HistoryDir = historyDirFor(f.out.history)
	inv := harness.InvestigateOptions{Reruns: f.reruns, NoShrink: !f.shrink, SavePlan: true}
	if f.reruns == 0 {
		inv.Reruns = -1
	}
	var runs []report.Run
	var outcomes []*harness.Outcome
	many := f.out.dir || len(work.pairs) > 1 // --history is a directory
	for i, p := range work.pairs {
		s := ss[p.Scenario]
		if f.seeds != "" {
			prog.start(fmt.Sprintf("%s seed %d", s.Name, p.Seed), f.mutant)
		} else {
			prog.start(s.Name, f.mutant)
		}
		opts := harness.RunOptions{Seed: p.Seed, Mutant: f.mutant, Plans: plans, Invocation: f.invocation()}
		o, err := r.Run(ctx, s, opts)
		prog.done()
		if err != nil {
			if o != nil && o.HistoryPath != "" {
				f.out.reportCutShort(cmd.ErrOrStderr(), "partial history kept", outcomes, o.HistoryPath, many)
			}
			if ctx.Err() != nil {
				return errInterrupted()
			}
			return usageError(oneLineError{fmt.Errorf("%s: %w", s.Name, err)})
		}
		run := report.FromOutcome(o)
		if f.reruns > 0 || f.shrink {
			// A user's service is not re-run (Investigate says why): no
			// promise of an investigation that will not happen.
			if !o.Met() && len(o.Caught()) > 0 && f.shrink && o.Scenario.Target.URL == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "investigating the failing plan of %s (re-runs, then shrinking)…\n", s.Name)
			}
			found := r.Investigate(ctx, o, opts, inv)
			if ctx.Err() != nil {
				// A classification from re-runs cut short would be a guess;
				// the run itself finished, and its history goes where
				// --history asked.
				f.out.reportCutShort(cmd.ErrOrStderr(), "history kept", outcomes, o.HistoryPath, many)
				if found.Partial != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "partial history kept: %s\n", found.Partial)
				}
				return errInterrupted()
			}
			again := opts.Invocation
			again.Plan = found.PlanPath
			run.AddInvestigation(found, harness.ReplayCommand(o.Scenario, o.Seed, o.Mutant, again))
		}
		runs = append(runs, run)
		outcomes = append(outcomes, o)
		if run.Verdict == checkers.EnvironmentError.String() && i+1 < len(work.pairs) {
			// The next seed meets the same dead database, full disk or
			// silent target: waiting out its retries says nothing new.
			fmt.Fprintf(cmd.ErrOrStderr(), "stopping: the environment failed in %s seed %d; %d of %d scenario × seed pairs not run\n",
				s.Name, p.Seed, len(work.pairs)-i-1, len(work.pairs))
			break
		}
	}
	rep := report.New(runs)
	rep.Shard = work.shard
	if err := f.out.write(cmd, rep, outcomes); err != nil {
		return err
	}
	return exitFor(rep)
}

// invocation is how this run was started, for its replay commands.
func (f runFlags) invocation() harness.Invocation {
	return harness.Invocation{Target: f.target, AllowRemote: f.allowRemote, DatabaseAddr: f.dbAddr, Plan: f.plan}
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

func exitFor(rep report.Report) error {
	if rep.ExitCode == 0 {
		return nil
	}
	return &ExitError{Code: rep.ExitCode}
}
