package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

func (m *Main) benchCmd() *cobra.Command {
	var (
		opts    bench.Options
		quick   bool
		out     string
		profile string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure detection power, false alarms and every speed figure; write BENCHMARKS.md",
		Long: `bench runs on the embedded environment and writes one Markdown report (BENCHMARKS.md)
with the machine it ran on and one table per section:

  detection     every mutant × --seeds seeds of the bundled suite: detection rate, time and
                requests to the first catch (median, p90)
  false-alarms  the correct reference × --storm-seeds seeds of storm: violations, inconclusive runs
  foreign       the services of examples/foreign (written independently of the reference), each as
                its own process: flawed ones × --foreign-seeds, correct ones × --foreign-clean-seeds
                (needs a checkout and the go command: it builds examples/foreign/cmd/foreignsvc)
  driver        the traffic driver (recording a history) against wrk and vegeta on a trivial handler,
                direct and through the in-process Toxiproxy
  checker       load + the seven checkers against the decoder alone, 10k to 1M events
  reference     the reference service against pgbench running the same SQL
  startup       the embedded environment's start-up, with and without a standby
  demo          the whole idemchaos demo, timed

The full run takes 15-25 minutes on 2 cores; progress goes to stderr. --quick is the CI
gate: every mutant × 3 seeds and the reference × 10 seeds of storm; it exits 1 if a mutant
escapes or the reference shows a violation or an inconclusive verdict, and writes no file
unless --out is given. --loaded runs that gate, with storm × 100 seeds, while two CPU-bound
processes load the machine (stress-ng --cpu 1, or Go burners when stress-ng is missing),
and reports its errors and inconclusive runs (target 0 and 0).`,
		Example: `  idemchaos bench
  idemchaos bench --only detection,false-alarms --seeds 5
  idemchaos bench --quick
  idemchaos bench --loaded --out loaded.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = cmd.ErrOrStderr()
			if profile != "" {
				f, err := os.Create(profile)
				if err != nil {
					return usageError(err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return usageError(err)
				}
				defer pprof.StopCPUProfile()
			}
			run := bench.Run
			if quick || opts.Loaded {
				quick, run = true, bench.Quick
			}
			rep, err := run(cmd.Context(), opts)
			var gate error
			if errors.Is(err, bench.ErrGate) {
				gate, err = err, nil
			}
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return errInterrupted()
				}
				if errors.Is(err, bench.ErrUnknownSection) {
					return usageError(err)
				}
				if rep == nil {
					return &ExitError{Code: ExitUsage, Err: err}
				}
			}
			var md bytes.Buffer
			if err := rep.Markdown(&md); err != nil {
				return err
			}
			if out == "" && !quick {
				out = "BENCHMARKS.md"
			}
			if out != "" {
				if err := os.WriteFile(out, md.Bytes(), 0o644); err != nil {
					return &ExitError{Code: ExitUsage, Err: fmt.Errorf("write %s: %w", out, err)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s)\n", out, rep.Elapsed.Round(1e9))
			} else {
				_, _ = cmd.OutOrStdout().Write(md.Bytes())
			}
			for _, s := range rep.Sections {
				if s.Err != "" && gate == nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "bench: section %s did not finish: %s\n", s.Name, s.Err)
				}
			}
			if gate != nil {
				return &ExitError{Code: ExitViolation, Err: gate}
			}
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "the CI gate: every mutant × 3 seeds, the reference × 10 seeds of storm; exit 1 if anything escapes or alarms")
	fl.BoolVar(&opts.Loaded, "loaded", false, "the quick gate and storm × 100 seeds with two CPU-bound processes alongside; exit 1 on any error, inconclusive run, violation or escape")
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these sections (comma-separated): detection, false-alarms, foreign, driver, checker, reference, startup, demo")
	fl.StringVar(&out, "out", "", "where to write the report (default BENCHMARKS.md; with --quick, stdout)")
	fl.IntVar(&opts.Seeds, "seeds", 0, "seeds per mutant in detection (default 20; --quick 3)")
	fl.IntVar(&opts.StormSeeds, "storm-seeds", 0, "seeds of storm in false-alarms (default 100; --quick 10)")
	fl.IntVar(&opts.ForeignSeeds, "foreign-seeds", 0, "seeds per flawed foreign service (default 20; --quick 3)")
	fl.IntVar(&opts.ForeignCleanSeeds, "foreign-clean-seeds", 0, "seeds per correct foreign service (default 100; --quick 10)")
	fl.IntVar(&opts.Repeats, "repeats", 0, "samples per timing in driver, checker and reference (default 5)")
	fl.IntVar(&opts.StartupRepeats, "startup-repeats", 0, "start-ups of each environment (default 10)")
	fl.IntVar(&opts.DemoRuns, "demo-runs", 0, "whole demos timed (default 3)")
	fl.DurationVar(&opts.Slice, "slice", 0, "length of one throughput sample (default 2s)")
	fl.IntVar(&opts.Concurrency, "concurrency", 0, "client concurrency of driver, wrk and the reference (default 16)")
	fl.StringVar(&opts.HistoryDir, "history-dir", m.env("HISTORY_DIR", ""), "keep run histories here (default a new temp dir, kept; env IDEMCHAOS_HISTORY_DIR)")
	fl.StringVar(&opts.Wrk, "wrk", "", "the wrk binary (default from PATH)")
	fl.StringVar(&opts.Pgbench, "pgbench", "", "the pgbench binary (default from PATH)")
	fl.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the whole run to this file (read it with go tool pprof -top)")
	return cmd
}
