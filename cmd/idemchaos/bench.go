package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

func (m *Main) benchCmd() *cobra.Command {
	var (
		opts     bench.Options
		quick    bool
		out      string
		profile  string
		seedList string
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
  consumers     issue 25: the embedded NATS broker's start, idemchaos's publish → deliver → record
                rate against the NATS Go client publishing asynchronously, a RabbitMQ node's start
  clients       issue 24: the client proxy's cost per attempt against Toxiproxy's, the check of a
                1M-event client history (needs a checkout and the go command: it runs the module's
                BenchmarkClientPath and BenchmarkLoadCheckClient), the curl client's 200 intents
                through idemchaos against straight at a reference, and the client corpus
                (examples/clients) × --client-seeds against each client's ground truth
  demo          the whole idemchaos demo, timed

The full run takes 15-25 minutes on 2 cores; progress goes to stderr. --quick is the CI
gate: every mutant × 3 seeds and the reference × 10 seeds of storm; it exits 1 if a mutant
escapes or the reference shows a violation or an inconclusive verdict, and writes no file
unless --out is given. --loaded runs that gate, with storm × 100 seeds, while two CPU-bound
processes load the machine (stress-ng --cpu 1, or shell busy loops when stress-ng is missing),
and reports its errors and inconclusive runs (target 0 and 0).

An existing report keeps what was measured by hand: bench rewrites only the blocks between
its markers (<!-- idemchaos bench: NAME --> … <!-- /idemchaos bench: NAME -->) that this run
made, and everything outside them stays byte for byte. With --only, it rewrites the sections
named and their rows of the Sections table; "targets" runs the sections the Targets table is
made of (detection, false-alarms, foreign, driver, checker, demo) and rewrites that table alone.
A run without --only rewrites every block, the Targets table only when all of them ran.`,
		Example: `  idemchaos bench
  idemchaos bench --only detection,false-alarms --seeds 5
  idemchaos bench --only targets
  idemchaos bench --quick
  idemchaos bench --loaded --out loaded.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = cmd.ErrOrStderr()
			if seedList != "" {
				s, err := bench.ParseSeeds(seedList)
				if err != nil {
					return usageError(fmt.Errorf("--foreign-seed-list: %w", err))
				}
				opts.ForeignSeedList = s
			}
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
			if out == "" && !quick && !opts.Loaded {
				out = "BENCHMARKS.md"
			}
			// An existing report gets only the blocks this run makes: the
			// sections measured by hand stay. Its markers are checked now,
			// not after a run of many minutes.
			var existing []byte
			if out != "" {
				b, err := os.ReadFile(out)
				switch {
				case err == nil:
					if err := bench.CheckSplice(b); err != nil {
						return usageError(fmt.Errorf("%s %w: bench rewrites only the blocks between its markers, to keep what was measured by hand; "+
							"mark them (see docs/benchmarks.md) or write elsewhere with --out", out, err))
					}
					existing = b
				case !errors.Is(err, os.ErrNotExist):
					return usageError(err)
				}
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
			if out != "" {
				data := md.Bytes()
				if existing != nil {
					// Read again: rows written by hand while it ran are kept too.
					if b, err := os.ReadFile(out); err == nil && bench.CheckSplice(b) == nil {
						existing = b
					}
					if data, err = rep.Splice(existing); err != nil {
						return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: %w", out, err)}
					}
					if rep.KeptTargets() {
						fmt.Fprintf(cmd.ErrOrStderr(), "bench: the Targets table of %s was kept: it is made of %s; "+
							"idemchaos bench --only targets rewrites it alone\n", out, strings.Join(bench.TargetSections(), ", "))
					}
				}
				if err := os.WriteFile(out, data, 0o644); err != nil {
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
	fl.StringSliceVar(&opts.Only, "only", nil, "run only these sections (comma-separated): detection, false-alarms, foreign, driver, checker, reference, startup, consumers, clients, demo; "+
		"targets runs the sections of the Targets table and rewrites that table alone")
	fl.StringVar(&out, "out", "", "where to write the report (default BENCHMARKS.md; with --quick, stdout)")
	fl.IntVar(&opts.Seeds, "seeds", 0, "seeds per mutant in detection (default 20; --quick 3)")
	fl.IntVar(&opts.StormSeeds, "storm-seeds", 0, "seeds of storm in false-alarms (default 100; --quick 10)")
	fl.IntVar(&opts.ForeignSeeds, "foreign-seeds", 0, "seeds per flawed foreign service (default 20; --quick 3)")
	fl.IntVar(&opts.ClientSeeds, "client-seeds", 0, "seeds per client of the client corpus, clients section (default 20; --quick 3)")
	fl.IntVar(&opts.ForeignCleanSeeds, "foreign-clean-seeds", 0, "seeds per correct foreign service (default 100; --quick 10)")
	fl.StringVar(&seedList, "foreign-seed-list", "", "run every foreign case at these seeds instead (\"52,61\", \"30-35,82\"; a number N alone is 1..N)")
	fl.StringSliceVar(&opts.ForeignCases, "foreign-cases", nil, "run only these foreign cases (comma-separated names; default every case)")
	fl.IntVar(&opts.Repeats, "repeats", 0, "samples per timing in driver, checker, reference, consumers and clients (default 5)")
	fl.IntVar(&opts.ConsumerMessages, "consumer-messages", 0, "messages per rate sample in consumers (default 5000)")
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
