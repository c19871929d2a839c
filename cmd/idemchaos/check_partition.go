package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/leftover"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/partcheck"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/shard"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

// autoPartitionBytes is the file size from which check splits a history
// on disk rather than loading it: an in-memory check holds about 250 bytes
// per event, so 512 MiB of JSONL (~1.5M events) stays under ~400 MiB.
const autoPartitionBytes = 512 << 20

// partitionBytes is about how much JSONL one partition holds when the
// count is automatic: a loaded partition takes about 1.5 times its JSONL,
// so one per core checked at once stays within a few hundred MB.
const partitionBytes = 32 << 20

// maxAutoPartitions bounds the automatic count: each partition is four
// open files (lines and their numbers, by key and by body).
const maxAutoPartitions = 512

// maxPartitions bounds --partitions and the N of --partition I/N: a
// split keeps up to four open files per partition (1024 is 4096 of them,
// within a usual descriptor limit), and a hundred machines each checking
// a tenth of a terabyte is far below it. Past it the count is a typo:
// 1/99999999999 asked for an 800 GB table and died out of memory.
const maxPartitions = 1024

// partitioned says how to check the named file: n partitions (0: in
// memory) and which one alone (-1: all).
func (f checkFlags) partitioned(name string) (n, only int, err error) {
	only = -1
	if f.partition != "" {
		i, count, ok := strings.Cut(f.partition, "/")
		a, aerr := strconv.Atoi(i)
		b, berr := strconv.Atoi(count)
		if !ok || aerr != nil || berr != nil || b < 1 || a < 0 || a >= b {
			return 0, 0, fmt.Errorf("--partition %q: want I/N with 0 <= I < N, e.g. 0/4", f.partition)
		}
		if b > maxPartitions {
			return 0, 0, fmt.Errorf("--partition %q: %d partitions, want at most %d", f.partition, b, maxPartitions)
		}
		if f.partitions != 0 && f.partitions != b {
			return 0, 0, fmt.Errorf("--partition %s and --partitions %d disagree on the count", f.partition, f.partitions)
		}
		return b, a, nil
	}
	switch {
	case f.partitions < 0 || f.partitions > maxPartitions:
		return 0, 0, fmt.Errorf("--partitions %d: want 0 (automatic), 1 (in memory) or up to %d", f.partitions, maxPartitions)
	case f.partitions == 1:
		return 0, -1, nil
	case f.partitions > 1:
		return f.partitions, -1, nil
	}
	st, err := os.Stat(name)
	if err != nil || st.Size() < autoPartitionBytes {
		return 0, -1, nil // a missing file is reported by the load
	}
	return int(min(max(2, st.Size()/partitionBytes), maxAutoPartitions)), -1, nil
}

// partitionedMemory is the soft memory limit of a partitioned check
// (unless GOMEMLIMIT says otherwise): the garbage collector works harder
// near it rather than let the heap double past what the partitions need.
const partitionedMemory = 768 << 20

// checkPartitioned checks one history partition by partition. With only
// >= 0 it also returns that partition's share, which merge joins with the
// other machines' shares.
func checkPartitioned(ctx context.Context, name string, contract checkers.Contract, names []string, f checkFlags, n, only int) (report.Run, *partcheck.Partial, error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(partitionedMemory))
	}
	// The partition files go to a scratch directory that the next command
	// removes should this one be killed outright.
	scratch, err := leftover.NewScratch(ctx)
	if err != nil {
		return report.Run{}, nil, err
	}
	defer scratch.Close()
	share, err := partcheck.Check(name, partcheck.Options{
		Partitions: n, Only: only, Contract: contract, Names: names, MaxTime: f.maxTime, Context: ctx, Dir: scratch.Dir(),
	})
	if err != nil {
		return report.Run{}, nil, historyError(name, err)
	}
	sum, res, err := share.Result()
	if err != nil {
		return report.Run{}, nil, err
	}
	return runOf(name, sum, res), share, nil
}

// runOf is the report of a history checked partition by partition.
func runOf(name string, sum *partcheck.Summary, j checkers.Judgement) report.Run {
	h := &history.History{Meta: sum.Meta, Events: sum.Events, Truncated: sum.Truncated, Interrupted: sum.Interrupted}
	return report.FromPartitioned(name, h, j, sum.KeySequences)
}

// shareReport is the JSON report of check --partition I/N: check's report
// of that partition, plus each history's share ("partitions", in the order
// of the runs), which merge joins into the report of the whole.
type shareReport struct {
	report.Report
	Partitions []*partcheck.Partial `json:"partitions"`
}

// printShares prints check --partition I/N --json's report and returns
// check's exit for that partition alone.
func printShares(cmd *cobra.Command, rep report.Report, shares []*partcheck.Partial) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	if err := enc.Encode(shareReport{Report: rep, Partitions: shares}); err != nil {
		return err
	}
	return exitFor(rep)
}

// mergeShares joins the reports of check --partition I/N --json, one per
// partition, into the report check gives on the whole histories. The
// partitions of each history must all be there, once, cut from the same
// file: anything else is an error (exit 3), never a verdict.
func mergeShares(reps []shareReport, files []string) (report.Report, error) {
	n := len(reps[0].Partitions)
	for i, r := range reps {
		if err := shard.CheckVerdicts(r.Report); err != nil {
			return report.Report{}, fmt.Errorf("%s: %w", files[i], err)
		}
		if len(r.Partitions) != n {
			return report.Report{}, fmt.Errorf("%s: %d histories, but %s has %d: the reports are of different checks", files[i], len(r.Partitions), files[0], n)
		}
	}
	runs := make([]report.Run, 0, n)
	for k := range n {
		shares := make([]*partcheck.Partial, len(reps))
		for i, r := range reps {
			shares[i] = r.Partitions[k]
			if shares[i] == nil {
				return report.Report{}, fmt.Errorf("%s: history %d has no partition", files[i], k+1)
			}
		}
		sum, res, err := partcheck.Merge(shares)
		if err != nil {
			return report.Report{}, err
		}
		name := shares[0].Source.Name
		for _, s := range shares {
			if s.Index == 0 {
				name = s.Source.Name // the paths may differ between machines
			}
		}
		runs = append(runs, runOf(name, sum, res))
	}
	out := report.New(runs)
	out.Merged = slices.Clone(files)
	return out, nil
}
