package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/partcheck"
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
		if f.partitions != 0 && f.partitions != b {
			return 0, 0, fmt.Errorf("--partition %s and --partitions %d disagree on the count", f.partition, f.partitions)
		}
		return b, a, nil
	}
	switch {
	case f.partitions < 0:
		return 0, 0, fmt.Errorf("--partitions %d: want 0 (automatic), 1 (in memory) or more", f.partitions)
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

// checkPartitioned checks one history partition by partition.
func checkPartitioned(ctx context.Context, name string, contract checkers.Contract, f checkFlags, n, only int) (report.Run, error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(partitionedMemory))
	}
	sum, res, err := partcheck.CheckFile(name, partcheck.Options{
		Partitions: n, Only: only, Contract: contract, Names: f.invariants, MaxTime: f.maxTime, Context: ctx,
	})
	if err != nil {
		return report.Run{}, historyError(name, err)
	}
	h := &history.History{Meta: sum.Meta, Events: sum.Events, Truncated: sum.Truncated, Interrupted: sum.Interrupted}
	return report.FromCheck(name, h, res), nil
}
