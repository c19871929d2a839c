package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

func (m *Main) demoCmd() *cobra.Command {
	var (
		seed    int64
		mutants []string
		envKind string
		images  struct{ pg, toxiproxy, reference string }
		out     outputFlags
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the bundled scenarios against the reference and every mutant; print the catch matrix",
		Long: `demo starts the embedded environment (a throwaway Postgres with a streaming standby,
Toxiproxy in-process, the reference service as child processes), runs every bundled
scenario against the correct reference — each must be clean — and, for every mutant
(one known idempotency pitfall each), runs the suite until a scenario catches it.

With --env docker the same matrix runs in containers instead (a private network,
a Postgres primary and streaming standby, toxiproxy-server, the reference as a
container); build the images once with 'idemchaos images build'.

Exit 0 only if the reference is clean and every mutant is caught; 3, with one
line naming the cause and no catch matrix, when the environment fails (its
Postgres dies, the disk fills).`,
		Example: `  idemchaos demo
  idemchaos demo --env docker
  idemchaos demo --mutant check-then-insert --mutant no-lease
  idemchaos demo --seed 7 --report demo.html --junit demo.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range mutants {
				if err := checkMutant(n); err != nil {
					return usageError(err)
				}
			}
			suite, err := scenarios.Bundled()
			if err != nil {
				return usageError(err)
			}
			if err := out.check(2); err != nil {
				return usageError(err)
			}
			kind, err := harness.ParseEnvKind(envKind)
			if err != nil {
				return usageError(err)
			}
			if kind == harness.EnvAuto {
				kind = harness.EnvLocal // the demo runs the reference itself
			}
			if kind != harness.EnvLocal && kind != harness.EnvDocker {
				return usageError(fmt.Errorf("--env %s: demo runs the reference itself, so only local or docker", envKind))
			}
			ctx := cmd.Context()
			r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: kind, Mutants: matrixMutants(mutants), Scenarios: suite,
				PGImage: images.pg, ToxiproxyImage: images.toxiproxy, ReferenceImage: images.reference})
			if err != nil {
				return usageError(err)
			}
			defer closeEnv(context.WithoutCancel(ctx))
			r.HistoryDir = historyDirFor("")
			prog := m.newProgress(cmd.ErrOrStderr())
			r.OnEvent = prog.event
			total := len(suite) + len(reference.Mutants())
			if len(mutants) > 0 {
				total = len(suite) + len(mutants)
			}
			done := 0
			prog.start(fmt.Sprintf("demo: %d scenarios × the reference and %d mutants", len(suite), total-len(suite)), "")
			finished := map[*harness.Outcome]bool{} // runs that ran to their end
			matrix, err := catchmatrix.Run(ctx, r, suite, catchmatrix.Options{Seed: seed, Mutants: mutants,
				AfterRun: func(row *catchmatrix.Row, o *harness.Outcome) {
					if o == nil {
						return
					}
					finished[o] = true
					who := "reference"
					if row.Mutant != "" {
						who = row.Mutant
					}
					verdict := "clean"
					if c := o.Caught(); len(c) > 0 {
						verdict = "caught by " + strings.Join(c, ", ")
					}
					if row.Mutant == "" || len(o.Caught()) > 0 {
						done++
					}
					prog.line(fmt.Sprintf("%-22s %-27s %s (%d requests, %s)", who, o.Scenario.Name, verdict, o.Requests, o.Elapsed.Round(1e6)))
				}})
			prog.done()
			if err != nil {
				if errors.Is(err, context.Canceled) {
					if o := lastRun(matrix); o != nil && !finished[o] && o.HistoryPath != "" {
						var done []*harness.Outcome
						for r := range finished {
							done = append(done, r)
						}
						out.reportCutShort(cmd.ErrOrStderr(), "partial history kept", done, o.HistoryPath, true)
					}
					return errInterrupted()
				}
				// The environment failed (a dead database, a full disk):
				// no catch matrix, which would read as mutants missed.
				if o := lastRun(matrix); o != nil && o.HistoryPath != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "history kept: %s\n", o.HistoryPath)
				}
				if out.json {
					if werr := writeJSON(cmd.OutOrStdout(), report.Failed(oneLineError{err})); werr != nil {
						return usageError(werr)
					}
				}
				return usageError(oneLineError{err})
			}
			runs, outcomes := demoRuns(matrix)
			// The matrix is the summary; --json, --junit and --report carry
			// every run in detail, with demo semantics (see demoRuns).
			rep := report.New(runs)
			rep.Matrix = matrixReport(matrix)
			rep.ExitCode, rep.Verdict = 0, "pass"
			if !matrix.OK() {
				rep.ExitCode, rep.Verdict = 1, "violation"
			}
			if err := out.write(cmd, rep, outcomes); err != nil {
				return err
			}
			return exitFor(rep)
		},
	}
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of every generated plan")
	cmd.Flags().StringArrayVar(&mutants, "mutant", nil, "limit the matrix to these mutants (repeatable)")
	cmd.Flags().StringVar(&envKind, "env", m.env("ENV", "local"), "environment: local or auto (throwaway Postgres and in-process Toxiproxy) or docker (containers; env IDEMCHAOS_ENV)")
	cmd.Flags().StringVar(&images.pg, "pg-image", m.env("PG_IMAGE", ""), "with --env docker: the Postgres image (env IDEMCHAOS_PG_IMAGE)")
	cmd.Flags().StringVar(&images.toxiproxy, "toxiproxy-image", m.env("TOXIPROXY_IMAGE", ""), "with --env docker: the toxiproxy-server image (env IDEMCHAOS_TOXIPROXY_IMAGE)")
	cmd.Flags().StringVar(&images.reference, "reference-image", m.env("REFERENCE_IMAGE", ""), "with --env docker: the reference service's image (env IDEMCHAOS_REFERENCE_IMAGE)")
	out.register(cmd.Flags())
	return cmd
}

// lastRun is the matrix's last run: the one an interrupt cut short, unless
// the interrupt came between runs.
func lastRun(m *catchmatrix.Matrix) *harness.Outcome {
	if m == nil {
		return nil
	}
	rows := append([]catchmatrix.Row{m.Reference}, m.Mutants...)
	for i := len(rows) - 1; i >= 0; i-- {
		if n := len(rows[i].Runs); n > 0 {
			return rows[i].Runs[n-1]
		}
	}
	return nil
}

// demoRuns are the runs demo reports, with demo semantics: what was
// expected of a run is met, whatever its verdict. Every run against the
// correct reference is listed (met when clean); for a mutant, the run that
// caught it (violated the invariant its pitfall trips) is listed with
// Expect "caught" and met — a catch is the demo
// working, not a failure — and a mutant no scenario caught lists all its
// runs, not met. The runs of a caught mutant that did not catch it are left
// out: the suite moves on to the next scenario by design. The histories of
// the met runs move to the pruned directory (see settlePassed).
func demoRuns(m *catchmatrix.Matrix) ([]report.Run, []*harness.Outcome) {
	type pick struct {
		o      *harness.Outcome
		expect string
		met    bool
		listed bool
	}
	var picks []pick
	for _, o := range m.Reference.Runs {
		picks = append(picks, pick{o, "", o.Met(), true})
	}
	for _, row := range m.Mutants {
		for _, o := range row.Runs {
			caught := row.Expected == "" && len(o.Caught()) > 0 || slices.Contains(o.Caught(), row.Expected)
			// A caught mutant's other runs are met too: not catching is
			// what a scenario aimed at another pitfall does.
			picks = append(picks, pick{o, "caught", caught || row.Caught, caught || !row.Caught})
		}
	}
	all := make([]*harness.Outcome, len(picks))
	met := make([]bool, len(picks))
	for i, p := range picks {
		all[i], met[i] = p.o, p.met
	}
	settlePassed(all, met, nil)
	var runs []report.Run
	var outcomes []*harness.Outcome
	for _, p := range picks {
		if !p.listed || p.o == nil {
			continue
		}
		run := report.FromOutcome(p.o)
		run.Expect, run.Met = p.expect, p.met
		runs = append(runs, run)
		outcomes = append(outcomes, p.o)
	}
	return runs, outcomes
}
