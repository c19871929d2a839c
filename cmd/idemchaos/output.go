package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	// dir makes --history a directory even for one run (a shard, whose
	// siblings write theirs next to it).
	dir bool
	// seeds says the runs are one scenario set over many seeds (--seeds):
	// the summary prints the failures and a tally per scenario, every
	// run's line only with verbose (-v).
	seeds, verbose bool
}

func (o *outputFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&o.json, "json", false, "print the JSON report (see docs/reports.md for its shape) instead of the summary")
	fl.StringVar(&o.junit, "junit", "", "write a JUnit XML report (one test case per scenario × invariant) to this file")
	fl.StringVar(&o.history, "history", "", "keep the history here (a file for one run, a directory for several)")
	fl.StringVar(&o.html, "report", "", "write a self-contained HTML report with a timeline per violating key")
}

// check finds, before any traffic is sent, an output path that cannot be
// written: a run of minutes must not end in "permission denied". runs is
// how many histories --history will hold (a directory when more than one).
func (o *outputFlags) check(runs int) error {
	if _, err := keepPassed(); err != nil {
		return err
	}
	for _, f := range []struct{ flag, path string }{{"--junit", o.junit}, {"--report", o.html}} {
		if f.path == "" {
			continue
		}
		if err := probeFile(f.path); err != nil {
			return fmt.Errorf("%s %s: cannot write there: %w", f.flag, f.path, unwrapPath(err))
		}
	}
	if o.history == "" {
		return nil
	}
	// A directory is probed as one only: probing it as a file first would
	// create a file at its path for a moment, and a sibling shard sharing
	// the directory could then fail to make it.
	var err error
	if runs > 1 || o.dir {
		err = probeDir(o.history)
	} else {
		err = probeFile(o.history)
	}
	if err != nil {
		return fmt.Errorf("--history %s: cannot write there: %w", o.history, unwrapPath(err))
	}
	return nil
}

// probeFile checks that path can be created or overwritten, leaving no
// file behind that was not there.
func probeFile(path string) error {
	if err := refuseKernelFS(path); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("it is a directory")
	}
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if os.IsNotExist(statErr) {
		return os.Remove(path)
	}
	return nil
}

// probeDir checks that files can be created in dir (made if missing).
func probeDir(dir string) error {
	if err := refuseKernelFS(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".idemchaos-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// kernelFS are the file systems whose files open for writing and then
// refuse, or take, what is written: /proc/self/status opens, its write
// fails after the run's traffic; /proc/sys/... would retune the machine.
var kernelFS = []string{"/proc", "/sys"}

// refuseKernelFS refuses an output path inside /proc or /sys, after
// following the symbolic links of its directory (/dev/stdout, a link
// into /proc/self/fd, stays allowed: its directory is /dev).
func refuseKernelFS(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dir, base := filepath.Split(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		abs = filepath.Join(real, base)
	}
	for _, root := range kernelFS {
		if abs == root || strings.HasPrefix(abs, root+"/") {
			return fmt.Errorf("%s is a kernel interface, not a file for reports or histories", root)
		}
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// write writes the requested files, then prints the summary (or JSON). A
// file that cannot be written makes the command an error (exit 3), and the
// JSON printed after says so: its exit_code is always the process's.
func (o *outputFlags) write(cmd *cobra.Command, rep report.Report, outcomes []*harness.Outcome) error {
	var failed error
	fail := func(flag, path string, err error) {
		if failed == nil && err != nil {
			failed = fmt.Errorf("%s %s: %w", flag, path, err)
		}
	}
	met := make([]bool, len(outcomes))
	for i := range met {
		met[i] = i < len(rep.Runs) && rep.Runs[i].Met && rep.Runs[i].Error == ""
	}
	settlePassed(outcomes, met, rep.Runs)
	if keep, err := keepPassed(); err == nil {
		prunePassed(keep, outcomes)
	}
	if o.history != "" {
		fail("--history", o.history, keepHistories(o.history, outcomes, rep.Runs, o.dir))
	}
	if o.html != "" {
		// The page links each history relative to where the page is.
		page := rep
		page.Runs = slices.Clone(rep.Runs)
		for i := range page.Runs {
			page.Runs[i].History = linkFrom(filepath.Dir(o.html), page.Runs[i].History)
		}
		fail("--report", o.html, writeOutput(o.html, func(w io.Writer) error { return writeHTMLReport(w, page, outcomes) }))
	}
	if wd, err := os.Getwd(); err == nil {
		for i := range rep.Runs {
			rep.Runs[i].History = relativeTo(wd, rep.Runs[i].History)
		}
	}
	if o.junit != "" {
		fail("--junit", o.junit, writeOutput(o.junit, func(w io.Writer) error { return report.WriteJUnit(w, rep) }))
	}
	if failed != nil {
		rep.ExitCode, rep.Error = ExitUsage, failed.Error()
	}
	out := cmd.OutOrStdout()
	if o.json {
		if err := writeJSON(out, rep); err != nil {
			return usageError(err)
		}
	} else {
		if rep.Matrix != nil {
			writeMatrix(out, rep.Matrix)
		} else if o.seeds {
			writeSeeds(out, rep, o.verbose)
		} else {
			report.WriteText(out, rep)
		}
		if o.html != "" && failed == nil {
			fmt.Fprintf(out, "report: %s\n", o.html)
		}
	}
	if failed != nil {
		return usageError(failed)
	}
	return nil
}

// writeJSON prints rep as the indented JSON report (run, demo, check and
// merge print the same shape).
func writeJSON(w io.Writer, rep report.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
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
func keepHistories(dst string, outcomes []*harness.Outcome, runs []report.Run, dir bool) error {
	if len(outcomes) == 1 && !dir {
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
