package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/report"
)

// outputFlags are the report flags run and demo share.
type outputFlags struct {
	json    bool
	junit   string
	history string
	html    string
}

func (o *outputFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&o.json, "json", false, "print the JSON report (see the README for its shape) instead of the summary")
	fl.StringVar(&o.junit, "junit", "", "write a JUnit XML report (one test case per scenario × invariant) to this file")
	fl.StringVar(&o.history, "history", "", "keep the history here (a file for one run, a directory for several)")
	fl.StringVar(&o.html, "report", "", "write a self-contained HTML report with a timeline per violating key")
}

// write prints the summary (or JSON) and writes the requested files.
func (o *outputFlags) write(cmd *cobra.Command, rep report.Report, outcomes []*harness.Outcome) error {
	if o.history != "" {
		if err := keepHistories(o.history, outcomes, rep.Runs); err != nil {
			return usageError(err)
		}
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if rep.Matrix != nil {
			report.WriteMatrix(out, rep.Matrix)
		} else {
			report.WriteText(out, rep)
		}
	}
	if o.junit != "" {
		if err := writeOutput(o.junit, func(w io.Writer) error { return report.WriteJUnit(w, rep) }); err != nil {
			return usageError(err)
		}
	}
	if o.html != "" {
		if err := writeOutput(o.html, func(w io.Writer) error { return writeHTMLReport(w, rep, outcomes) }); err != nil {
			return usageError(err)
		}
		if !o.json {
			fmt.Fprintf(out, "report: %s\n", o.html)
		}
	}
	return nil
}

func writeOutput(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// keepHistories copies each run's history to where --history asked, and
// points the report at the copies.
func keepHistories(dst string, outcomes []*harness.Outcome, runs []report.Run) error {
	if len(outcomes) == 1 {
		if err := copyFile(outcomes[0].HistoryPath, dst); err != nil {
			return err
		}
		runs[0].History = dst
		return nil
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for i, o := range outcomes {
		p := filepath.Join(dst, filepath.Base(o.HistoryPath))
		if err := copyFile(o.HistoryPath, p); err != nil {
			return err
		}
		if i < len(runs) {
			runs[i].History = p
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// historyDirFor is where runs write their histories: a directory of their
// own under the system temp dir, which outlives the run.
func historyDirFor(string) string {
	return filepath.Join(os.TempDir(), "idemchaos-histories")
}
