package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/partcheck"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

type checkFlags struct {
	json       bool
	invariants []string
	contract   contractFlags
	maxTime    time.Duration
	effects    string
	// allowRemote lets --effects read an oracle off this machine.
	allowRemote bool
	partitions  int
	partition   string
	together    bool
}

func (m *Main) checkCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check FILE.jsonl...",
		Short: "Check invariants over recorded histories, offline",
		Long: `check reads one or more JSONL histories (format v1, see docs/history-format.md), produced by
idemchaos or by any other tool, and judges the invariants over them.

The contract a history was judged by (status codes, payload fingerprint,
replay headers, bounds) is read from its meta event when the run wrote it;
the contract flags override it field by field.

A history is judged step by step with the rules a run applies (see
ARCHITECTURE.md, "One verdict"), so the history of a run gets the run's
verdict: steps and their expectations, nothing to judge (404 or 403
everywhere, nothing sent), environment errors the run recorded.

Exit codes: 0 every expectation held, 1 a violation, 2 nothing to judge or
inconclusive (no violation), 3 a file could not be read or is malformed, or
the history records an environment error.`,
		Example: `  idemchaos check testdata/histories/exactly-once/response-drop-retry-ok.jsonl
  idemchaos check --json run.jsonl
  idemchaos check --invariant exactly-once --invariant replay-identical run.jsonl
  idemchaos check --profile stripe --decision-bound 10s run.jsonl
  idemchaos check --reuse 400 --in-flight 425 --missing-key 0 --fingerprint canonical run.jsonl
  idemchaos check --effects my-api.yaml recorded.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.runCheck(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print a JSON report instead of the human summary")
	fl.StringArrayVar(&f.invariants, "invariant", nil, "check only this invariant (repeatable; default: the ones the history names, else all seven, or the ten client invariants for a client run's history)")
	f.contract.register(fl, m.env("PROFILE", ""))
	fl.DurationVar(&f.maxTime, "max-time", 30*time.Second, "time budget per history for the checks that compare the attempts of a key; keys left unchecked are unknown (0: no budget)")
	fl.BoolVar(&f.together, "together", false, "judge the files as ONE system: histories of several drivers against one service at once (effects read once; times compared only within a file, see docs/past-one-machine.md)")
	fl.StringVar(&f.effects, "effects", "", "read the effects with this scenario's oracle (sql or http) and add them (for a recording)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "with --effects: allow an oracle (effects.dsn, effects.url) that is not on a loopback address")
	fl.IntVar(&f.partitions, "partitions", 0, "split the history by key (a client run's by intent) into N partitions on disk and check them in parallel, in bounded memory (0: automatic, on for files over 512 MiB; 1: in memory)")
	fl.StringVar(&f.partition, "partition", "", "check only partition I/N of the keys (one machine's share of a huge history)")
	return cmd
}

func (m *Main) runCheck(cmd *cobra.Command, f checkFlags, files []string) error {
	for _, name := range f.invariants {
		if _, err := checkers.ByName(name); err != nil {
			return usageError(err)
		}
	}
	if _, err := f.contract.apply(checkers.DefaultContract()); err != nil {
		return usageError(err)
	}
	if f.together && (f.partitions > 1 || f.partition != "") {
		return usageError(fmt.Errorf("--together joins the histories in memory: it does not combine with --partitions or --partition"))
	}
	if f.together {
		run, err := checkTogether(cmd, f, files)
		if err != nil {
			return usageError(err)
		}
		return m.printCheck(cmd, f, report.New([]report.Run{run}))
	}
	var runs []report.Run
	var shares []*partcheck.Partial // check --partition I/N: each file's share, for merge
	for _, name := range files {
		contract, names, err := contractOf(name, f)
		if err != nil {
			return usageError(err)
		}
		checker, err := f.checker(contract, names)
		if err != nil {
			return usageError(fmt.Errorf("%s: %w", name, err))
		}
		if n, only, err := f.partitioned(name); err != nil {
			return usageError(err)
		} else if n > 0 {
			if f.effects != "" {
				return usageError(fmt.Errorf("--effects reads the effects into memory: it does not combine with a partitioned check"))
			}
			run, share, err := checkPartitioned(cmd.Context(), name, contract, names, f, n, only)
			if err != nil {
				return usageError(err)
			}
			runs = append(runs, run)
			if only >= 0 {
				shares = append(shares, share)
			}
			continue
		}
		h, err := loadFile(name, contract.LoadOptions())
		if err != nil {
			return usageError(err)
		}
		if f.effects != "" {
			if err := addEffects(cmd.Context(), h, f.effects, f.allowRemote); err != nil {
				return usageError(err)
			}
		}
		// Step by step, with the verdict rules a run applies: the history of
		// a run gets the run's verdict.
		runs = append(runs, report.FromJudgement(name, h, checkers.Judge(h, checker, contract.Options()...)))
	}
	if len(shares) > 0 && f.json {
		return printShares(cmd, report.New(runs), shares)
	}
	return m.printCheck(cmd, f, report.New(runs))
}

// checker is the checker of contract with the invariants named (all
// seven for none), bounded by --max-time when given.
func (f checkFlags) checker(contract checkers.Contract, names []string) (checkers.Checker, error) {
	c, err := checkers.ForContract(contract, names...)
	if err != nil {
		return nil, err
	}
	if f.maxTime > 0 {
		c = checkers.WithDeadline(c, f.maxTime)
	}
	return c, nil
}

// printCheck prints check's report and returns its exit.
func (m *Main) printCheck(cmd *cobra.Command, f checkFlags, rep report.Report) error {
	out := cmd.OutOrStdout()
	if f.json {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		report.WriteText(out, rep)
	}
	return exitFor(rep)
}

// contractOf returns the contract to judge a history by — the one its
// meta event carries (the defaults when it carries none), with the contract
// flags applied over it — and the invariants: those of --invariant, else
// those the meta event names (the run's), else nil for all seven.
func contractOf(name string, cf checkFlags) (checkers.Contract, []string, error) {
	c, names, _, err := metaContract(name, cf.contract)
	if len(cf.invariants) > 0 {
		names = cf.invariants
	}
	return c, names, err
}

// metaContract reads the contract and invariants of a history's meta event,
// and its mode: a client run's history names the client suite when it names
// no invariants.
func metaContract(name string, flags contractFlags) (checkers.Contract, []string, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return checkers.Contract{}, nil, "", fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	var meta history.Event
	err = history.NewReader(f).Next(&meta)
	var le *history.LineError
	switch {
	case errors.As(err, &le):
		return checkers.Contract{}, nil, "", fmt.Errorf("%s:%d: %s", name, le.Line, le.Msg)
	case errors.Is(err, io.EOF):
		return checkers.Contract{}, nil, "", fmt.Errorf(`%s:1: empty history: expected a meta event {"type":"meta","v":1,...}`, name)
	case err != nil:
		return checkers.Contract{}, nil, "", fmt.Errorf("%s: %w", name, err)
	}
	base, err := checkers.ContractFromMeta(meta.Contract)
	if err != nil {
		return checkers.Contract{}, nil, "", fmt.Errorf("%s:1: contract: %w", name, err)
	}
	c, err := flags.apply(base)
	if err != nil {
		return checkers.Contract{}, nil, "", fmt.Errorf("%s: %w", name, err)
	}
	for _, n := range meta.Invariants {
		if _, err := checkers.ByName(n); err != nil {
			return checkers.Contract{}, nil, "", fmt.Errorf("%s:1: invariants: %w", name, err)
		}
	}
	names := meta.Invariants
	if len(names) == 0 && meta.Mode == history.ModeClient {
		names = checkers.DefaultNames(meta.Mode)
	}
	return c, names, meta.Mode, nil
}

// loadFile loads one history; a malformed one is "file:line: what was wrong".
func loadFile(name string, opts history.LoadOptions) (*history.History, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := history.Load(f, opts)
	if err != nil {
		return nil, historyError(name, err)
	}
	return h, nil
}

// historyError names the file of a history that could not be read, and
// the line when the history is malformed: "file:line: what was wrong".
func historyError(name string, err error) error {
	var le *history.LineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s", name, le.Line, le.Msg)
	}
	return fmt.Errorf("%s: %w", name, err)
}
