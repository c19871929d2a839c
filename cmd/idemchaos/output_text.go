package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/catchmatrix"
	"github.com/idemchaos/idemchaos/report"
)

// The text forms only the command prints: a run over many seeds, and
// demo's catch matrix.

// writeSeeds prints the summary of a run over many seeds (run --seeds):
// the violations and the lines of the runs that failed — every run's with
// verbose — then one tally line per scenario, in the order first run.
func writeSeeds(w io.Writer, rep report.Report, verbose bool) {
	shown := rep
	if !verbose {
		shown.Runs = nil
		for _, run := range rep.Runs {
			if !passed(run) {
				shown.Runs = append(shown.Runs, run)
			}
		}
	}
	report.WriteText(w, shown)
	type count struct{ passed, failed, inconclusive, errors int }
	var order []string
	counts := map[string]*count{}
	for _, run := range rep.Runs {
		name := run.Label()
		c := counts[name]
		if c == nil {
			c = &count{}
			counts[name] = c
			order = append(order, name)
		}
		switch {
		case passed(run):
			c.passed++
		case run.Error != "" || run.Verdict == checkers.EnvironmentError.String():
			c.errors++
		case run.Verdict == checkers.Unknown.String():
			c.inconclusive++
		default:
			c.failed++
		}
	}
	if len(shown.Runs) > 0 {
		fmt.Fprintln(w)
	}
	for _, name := range order {
		c := counts[name]
		fmt.Fprintf(w, "TALLY %s: %d passed, %d failed, %d inconclusive", name, c.passed, c.failed, c.inconclusive)
		if c.errors > 0 {
			fmt.Fprintf(w, ", %d environment errors", c.errors)
		}
		fmt.Fprintf(w, " (%d seeds)\n", c.passed+c.failed+c.inconclusive+c.errors)
	}
}

// passed says every expectation of the run held.
func passed(run report.Run) bool { return run.Met && run.Error == "" }

// writeMatrix prints demo's catch matrix.
func writeMatrix(w io.Writer, m *report.Matrix) {
	fmt.Fprintln(w, "CATCH MATRIX")
	fmt.Fprintf(w, "%-22s %-7s %-52s %-26s %8s %6s\n", "system", "result", "caught by", "scenario", "time", "reqs")
	ref := "CLEAN"
	if !m.Reference.Clean {
		ref = "DIRTY"
	}
	if m.Reference.Error != "" {
		ref = "ERROR"
	}
	fmt.Fprintf(w, "%-22s %-7s %-52s %-26s %8s %6d\n", "reference (correct)", ref, report.OrDash(strings.Join(m.Reference.By, ", ")),
		fmt.Sprintf("%d/%d scenarios clean", m.Reference.CleanRuns, m.Reference.Runs), msOf(time.Duration(m.Reference.ElapsedMS)*time.Millisecond), m.Reference.Requests)
	for _, r := range m.Mutants {
		res := "CAUGHT"
		if !r.Caught {
			res = "MISSED"
		}
		fmt.Fprintf(w, "%-22s %-7s %-52s %-26s %8s %6d\n", r.Mutant, res, report.OrDash(strings.Join(r.By, ", ")), report.OrDash(r.Scenario),
			msOf(time.Duration(r.ElapsedMS)*time.Millisecond), r.Requests)
		if r.Error != "" {
			fmt.Fprintf(w, "%-22s   error: %s\n", "", r.Error)
		}
	}
	caught := 0
	for _, r := range m.Mutants {
		if r.Caught {
			caught++
		}
	}
	verdict := "reference clean, every mutant caught"
	if !m.OK {
		verdict = "NOT OK"
	}
	fmt.Fprintf(w, "\n%d/%d mutants caught; %s; %s in all\n", caught, len(m.Mutants), verdict, msOf(time.Duration(m.ElapsedMS)*time.Millisecond))
}

// matrixReport turns demo's catch matrix into its report form.
func matrixReport(m *catchmatrix.Matrix) *report.Matrix {
	row := func(r catchmatrix.Row) report.MatrixRow {
		out := report.MatrixRow{Mutant: r.Mutant, Pitfall: r.Pitfall, Expected: r.Expected, Caught: r.Caught, Clean: r.Clean,
			By: append([]string{}, r.By...), Scenario: r.Scenario, ElapsedMS: r.Elapsed.Milliseconds(), Requests: r.Requests, Runs: len(r.Runs)}
		for _, o := range r.Runs {
			if o.Met() {
				out.CleanRuns++
			}
		}
		if r.Err != nil {
			out.Error = r.Err.Error()
		}
		return out
	}
	out := &report.Matrix{Reference: row(m.Reference), ElapsedMS: m.Elapsed.Milliseconds(), OK: m.OK()}
	for _, r := range m.Mutants {
		out.Mutants = append(out.Mutants, row(r))
	}
	return out
}

func msOf(d time.Duration) string { return d.Round(time.Millisecond).String() }
