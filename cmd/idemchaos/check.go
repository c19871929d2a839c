package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

type checkFlags struct {
	json          bool
	invariants    []string
	profile       string
	headers       []string
	decisionBound time.Duration
	effects       string
}

func (m *Main) checkCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check FILE.jsonl...",
		Short: "Check invariants over recorded histories, offline",
		Long: `check reads one or more JSONL histories (format v1, see the README), produced by
idemchaos or by any other tool, and judges the invariants over them.

Exit codes: 0 every invariant held, 1 a violation, 2 inconclusive (unknown
verdicts, no violation), 3 a file could not be read or is malformed.`,
		Example: `  idemchaos check testdata/histories/exactly-once/response-drop-retry-ok.jsonl
  idemchaos check --json run.jsonl
  idemchaos check --invariant exactly-once --invariant replay-identical run.jsonl
  idemchaos check --profile stripe --decision-bound 10s run.jsonl
  idemchaos check --effects my-api.yaml recorded.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.runCheck(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print a JSON report instead of the human summary")
	fl.StringArrayVar(&f.invariants, "invariant", nil, "check only this invariant (repeatable; default: all seven)")
	fl.StringVar(&f.profile, "profile", m.env("PROFILE", "ietf"), "status contract profile: ietf or stripe (env IDEMCHAOS_PROFILE)")
	fl.StringSliceVar(&f.headers, "headers", []string{"Content-Type"}, "response headers that must be identical on replay, besides status and body")
	fl.DurationVar(&f.decisionBound, "decision-bound", 5*time.Second, "how long after faults heal a retried key may stay undecided")
	fl.StringVar(&f.effects, "effects", "", "read the effects with this scenario's oracle (sql or http) and add them (for a recording)")
	return cmd
}

func (m *Main) runCheck(cmd *cobra.Command, f checkFlags, files []string) error {
	profile, err := checkers.ProfileByName(f.profile)
	if err != nil {
		return usageError(err)
	}
	opts := []checkers.Option{checkers.WithProfile(profile), checkers.WithHeaders(f.headers...), checkers.WithDecisionBound(f.decisionBound)}
	checker := checkers.Default(opts...)
	if len(f.invariants) > 0 {
		var cs []checkers.Checker
		for _, name := range f.invariants {
			c, err := checkers.ByName(name, opts...)
			if err != nil {
				return usageError(err)
			}
			cs = append(cs, c)
		}
		checker = checkers.All(cs...)
	}
	keep := append(append([]string(nil), history.DefaultKeepHeaders...), f.headers...)
	var runs []report.Run
	for _, name := range files {
		h, err := loadFile(name, keep)
		if err != nil {
			return usageError(err)
		}
		if f.effects != "" {
			if err := addEffects(cmd.Context(), h, f.effects); err != nil {
				return usageError(err)
			}
		}
		run := report.FromCheck(name, h, checker.Check(h, h.Effects))
		runs = append(runs, run)
	}
	rep := report.New(runs)
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		report.WriteText(out, rep)
	}
	return exitFor(rep)
}

// loadFile loads one history; a malformed one is "file:line: what was wrong".
func loadFile(name string, keep []string) (*history.History, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{KeepHeaders: keep})
	var le *history.LineError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s:%d: %s", name, le.Line, le.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return h, nil
}
