package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/shard"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

type mergeFlags struct {
	json      bool
	junit     string
	html      string
	histories string
}

func (m *Main) mergeCmd() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge SHARD.json... | PARTITION.json...",
		Short: "Join the JSON reports of a sharded run, or of a check split across machines, into one verdict, JUnit and HTML report",
		Long: `merge reads the JSON reports that run --shard i/N --json wrote, one per shard,
and writes the report one process running every scenario × seed pair would
have written: one verdict, one JUnit file, one HTML report, and its exit code.

Every shard must be there exactly once, from the same run (scenarios, seeds,
mutant, shard count), with every pair it was given: a missing, doubled or
cut-short shard is an error (exit 3), never a pass.

The HTML report draws a timeline per violating key from the shards'
histories: each run's history path as the shard wrote it, or the file of
that name in --histories (where a CI job collected the shards' artifacts).
A failure repeated across runs (same scenario, invariant, cause and
explanation but for keys and numbers) is drawn once, from one history;
the other runs list their violations with the file holding each history.

merge also reads the JSON reports that check --partition i/N --json wrote,
one per partition of the same histories, and writes the report check would
have written on the whole files (same verdicts, counts and explanations).
Every partition 0/N to N-1/N must be there exactly once, cut from the same
file (each report records its size and SHA-256), checked by the same
invariants and contract: a missing or doubled partition, another N or
another file is an error (exit 3). The HTML report then has no timelines.

Exit codes: 0 every expectation held, 1 a violation, 2 inconclusive, 3 a
report could not be read, or the shards do not make a whole run.`,
		Example: `  idemchaos run -s scenarios/key-reuse.yaml --seeds 1-400 --shard 2/4 --history h/ --json > shard-2.json
  idemchaos merge shard-*.json --junit idemchaos.xml --report idemchaos.html --histories h/
  idemchaos check --partition 0/3 --json trace.jsonl > part-0.json   # on each of 3 machines
  idemchaos merge part-*.json --junit check.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return m.runMerge(cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the merged JSON report instead of the summary")
	fl.StringVar(&f.junit, "junit", "", "write the merged JUnit XML report to this file")
	fl.StringVar(&f.html, "report", "", "write the merged HTML report to this file")
	fl.StringVar(&f.histories, "histories", "", "directory holding the shards' histories, for the HTML report's timelines")
	return cmd
}

func (m *Main) runMerge(cmd *cobra.Command, f mergeFlags, files []string) error {
	reps := make([]shareReport, len(files))
	shares := 0
	for i, name := range files {
		b, err := readReport(name)
		if err != nil {
			return usageError(err)
		}
		if err := json.Unmarshal(b, &reps[i]); err != nil {
			return usageError(fmt.Errorf("%s: not a JSON report: %w", name, err))
		}
		if reps[i].Partitions != nil {
			shares++
		}
	}
	var rep report.Report
	var err error
	switch shares {
	case 0:
		plain := make([]report.Report, len(reps))
		for i := range reps {
			plain[i] = reps[i].Report
		}
		rep, err = shard.Merge(plain, files)
	case len(files):
		rep, err = mergeShares(reps, files)
	default:
		err = fmt.Errorf("merge: %d of the %d reports are of check --partition, the others not: merge joins the shards of one run or the partitions of one check", shares, len(files))
	}
	if err != nil {
		return usageError(err)
	}
	if f.junit != "" {
		if err := writeOutput(f.junit, func(w io.Writer) error { return report.WriteJUnit(w, rep) }); err != nil {
			return usageError(fmt.Errorf("--junit %s: %w", f.junit, err))
		}
	}
	if f.html != "" {
		page := rep
		var hs map[string]*history.History
		if shares == 0 {
			// A partitioned history is too large to load for timelines.
			page = withHistoriesIn(rep, f.histories)
			hs = mergedHistories(page)
		}
		if err := writeOutput(f.html, func(w io.Writer) error { return htmlpage.Write(w, page, htmlpage.Timelines(page, hs)) }); err != nil {
			return usageError(fmt.Errorf("--report %s: %w", f.html, err))
		}
	}
	out := cmd.OutOrStdout()
	if f.json {
		if err := writeJSON(out, rep); err != nil {
			return usageError(err)
		}
	} else {
		report.WriteText(out, rep)
		if shares == 0 {
			fmt.Fprintf(out, "merged %d shards: %d runs\n", len(files), len(rep.Runs))
		} else {
			fmt.Fprintf(out, "merged %d partitions: %d histories\n", len(files), len(rep.Runs))
		}
	}
	return exitFor(rep)
}

// maxReportBytes bounds one report merge reads: a shard's report is a few
// KB per run, and a partition's a few KB per history.
const maxReportBytes = 256 << 20

// readReport reads one report file, refusing one past maxReportBytes
// after reading one byte more.
func readReport(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxReportBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a report of idemchaos's", name, maxReportBytes>>20)
	}
	return b, nil
}

// withHistoriesIn returns rep with each run's history path pointing at the
// file of that name in dir when there is one (where a CI job collected the
// shards' artifacts): the HTML report names the file a reader can open.
func withHistoriesIn(rep report.Report, dir string) report.Report {
	if dir == "" {
		return rep
	}
	rep.Runs = slices.Clone(rep.Runs)
	for i, run := range rep.Runs {
		if run.History == "" {
			continue
		}
		if p := filepath.Join(dir, filepath.Base(run.History)); fileExists(p) {
			rep.Runs[i].History = p
		}
	}
	return rep
}

// mergedHistories loads the histories the HTML report's timelines are drawn
// from: one run per failure signature (htmlpage.TimelineRuns), not every
// violating run; a sweep of 200 seeds against one bug loads one. They are
// loaded in parallel, one per core. One that cannot be read leaves its
// signature to the next run that has it: the verdict does not depend on
// it, and the page says what was not loaded.
func mergedHistories(rep report.Report) map[string]*history.History {
	hs := map[string]*history.History{}
	lost := map[int]bool{}
	for {
		var want []int
		for _, i := range htmlpage.TimelineRuns(rep, lost) {
			if hs[htmlpage.HistoryKey(rep.Runs[i], i)] == nil {
				want = append(want, i)
			}
		}
		if len(want) == 0 {
			return hs
		}
		loaded := make([]*history.History, len(want))
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(runtime.GOMAXPROCS(0), len(want)) {
			wg.Go(func() {
				for k := range next {
					loaded[k] = loadHistory(rep.Runs[want[k]].History)
				}
			})
		}
		for k := range want {
			next <- k
		}
		close(next)
		wg.Wait()
		more := false
		for k, i := range want {
			if loaded[k] == nil {
				lost[i], more = true, true
				continue
			}
			hs[htmlpage.HistoryKey(rep.Runs[i], i)] = loaded[k]
		}
		if !more {
			return hs
		}
	}
}

// loadHistory loads one history with the contract its meta event records,
// or returns nil.
func loadHistory(path string) *history.History {
	contract, _, _, err := metaContract(path, contractFlags{})
	if err != nil {
		return nil
	}
	h, err := loadFile(path, contract.LoadOptions())
	if err != nil {
		return nil
	}
	return h
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
