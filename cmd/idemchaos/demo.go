package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/internal/env"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/scenarios"
)

func (m *Main) demoCmd() *cobra.Command {
	var (
		seed    int64
		mutants []string
		out     outputFlags
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the bundled scenarios against the reference and every mutant; print the catch matrix",
		Long: `demo starts the embedded environment (a throwaway Postgres with a streaming standby,
Toxiproxy in-process, the reference service as child processes), runs every bundled
scenario against the correct reference — each must be clean — and, for every mutant
(one known idempotency pitfall each), runs the suite until a scenario catches it.

Exit 0 only if the reference is clean and every mutant is caught.`,
		Example: `  idemchaos demo
  idemchaos demo --mutant check-then-insert --mutant no-lease
  idemchaos demo --seed 7 --report demo.html --junit demo.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range mutants {
				if err := harness.CheckMutant(n); err != nil {
					return usageError(err)
				}
			}
			suite, err := scenarios.Bundled()
			if err != nil {
				return usageError(err)
			}
			ctx := cmd.Context()
			r, closeEnv, err := harness.Open(ctx, harness.OpenOptions{Kind: env.KindLocal, Mutants: harness.MatrixMutants(mutants), Scenarios: suite})
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
			matrix, err := r.CatchMatrix(ctx, suite, harness.MatrixOptions{Seed: seed, Mutants: mutants,
				AfterRun: func(row *harness.MatrixRow, o *harness.Outcome) {
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
						fmt.Fprintf(cmd.ErrOrStderr(), "partial history kept: %s\n", o.HistoryPath)
					}
					return errInterrupted()
				}
				return usageError(err)
			}
			var runs []report.Run
			var outcomes []*harness.Outcome
			for _, row := range append([]harness.MatrixRow{matrix.Reference}, matrix.Mutants...) {
				for _, o := range row.Runs {
					if row.Mutant == "" && o.Met() {
						continue // the summary lists what needs reading: failures and catches
					}
					if row.Mutant != "" && len(o.Caught()) == 0 {
						continue
					}
					runs = append(runs, report.FromOutcome(o))
					outcomes = append(outcomes, o)
				}
			}
			// The matrix is the summary; --json, --junit and --report carry
			// every catch and every unclean reference run in detail.
			rep := report.New(runs)
			rep.Matrix = report.FromMatrix(matrix)
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
	out.register(cmd.Flags())
	return cmd
}

// lastRun is the matrix's last run: the one an interrupt cut short, unless
// the interrupt came between runs.
func lastRun(m *harness.Matrix) *harness.Outcome {
	if m == nil {
		return nil
	}
	rows := append([]harness.MatrixRow{m.Reference}, m.Mutants...)
	for i := len(rows) - 1; i >= 0; i-- {
		if n := len(rows[i].Runs); n > 0 {
			return rows[i].Runs[n-1]
		}
	}
	return nil
}
