package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

type checkFlags struct {
	json          bool
	invariants    []string
	profile       string
	headers       []string
	decisionBound time.Duration
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
  idemchaos check --profile stripe --decision-bound 10s run.jsonl`,
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
	var reports []fileReport
	worst := checkers.Pass
	for _, name := range files {
		h, err := loadFile(name, keep)
		if err != nil {
			return usageError(err)
		}
		res := checker.Check(h, h.Effects)
		reports = append(reports, fileReport{File: name, History: h, Result: res})
		worst = max(worst, res.Verdict)
	}
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(checkJSON(reports, worst)); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			writeHuman(out, r)
		}
	}
	return verdictError(worst)
}

// verdictError maps the worst verdict to the command's exit.
func verdictError(v checkers.Verdict) error {
	switch v {
	case checkers.Violated:
		return &ExitError{Code: ExitViolation}
	case checkers.Unknown:
		return &ExitError{Code: ExitInconclusive}
	}
	return nil
}

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

type fileReport struct {
	File    string
	History *history.History
	Result  checkers.Result
}

func verdictWord(v checkers.Verdict) string {
	switch v {
	case checkers.Pass:
		return "PASS"
	case checkers.Violated:
		return "VIOLATION"
	}
	return "UNKNOWN"
}

// writeHuman prints violations first, then the verdict of every invariant.
func writeHuman(w interface{ Write([]byte) (int, error) }, r fileReport) {
	h := r.History
	fmt.Fprintf(w, "%s: %s — %d events, %d attempts, %d effects, %d faults", r.File, verdictWord(r.Result.Verdict), h.Events, len(h.Attempts), len(h.Effects), len(h.Faults))
	if h.Meta.Scenario != "" {
		fmt.Fprintf(w, ", scenario %s seed %d", h.Meta.Scenario, h.Meta.Seed)
	}
	fmt.Fprintln(w)
	if h.Truncated {
		fmt.Fprintln(w, "  warning: the history is truncated (its last line was cut off)")
	}
	n := 0
	for _, p := range r.Result.Results {
		for _, v := range p.Violations {
			n++
			fmt.Fprintf(w, "\n  %d. %s — %s\n", n, p.Name, describeWhere(v))
			fmt.Fprintf(w, "     %s\n", v.Explanation)
			if v.Cause != "" {
				fmt.Fprintf(w, "     likely cause: %s\n", v.Cause)
			}
		}
	}
	if n > 0 {
		fmt.Fprintln(w)
	}
	for _, p := range r.Result.Results {
		line := fmt.Sprintf("  %-9s %-19s checked %d", verdictWord(p.Verdict), p.Name, p.Checked)
		if len(p.Violations) > 0 {
			line += fmt.Sprintf(", %d %s", len(p.Violations), map[bool]string{true: "violation", false: "violations"}[len(p.Violations) == 1])
		}
		if p.Reason != "" {
			line += " — " + p.Reason
		}
		fmt.Fprintln(w, line)
	}
}

func describeWhere(v checkers.Violation) string {
	var parts []string
	if v.Tenant != "" {
		parts = append(parts, "tenant "+v.Tenant)
	}
	if v.Method != "" || v.Path != "" {
		parts = append(parts, strings.TrimSpace(v.Method+" "+v.Path))
	}
	if v.Key != "" {
		parts = append(parts, "key "+v.Key)
	}
	parts = append(parts, fmt.Sprintf("ops %v", v.Ops))
	return strings.Join(parts, ", ")
}

// The JSON report: a documented, stable shape (see the README).
type checkReportJSON struct {
	Verdict  string     `json:"verdict"`
	ExitCode int        `json:"exit_code"`
	Files    []fileJSON `json:"files"`
}

type fileJSON struct {
	File       string          `json:"file"`
	Verdict    string          `json:"verdict"`
	Scenario   string          `json:"scenario,omitempty"`
	Seed       int64           `json:"seed"`
	Events     int             `json:"events"`
	Attempts   int             `json:"attempts"`
	Effects    int             `json:"effects"`
	Faults     int             `json:"faults"`
	Truncated  bool            `json:"truncated"`
	Invariants []invariantJSON `json:"invariants"`
}

type invariantJSON struct {
	Name       string          `json:"name"`
	Verdict    string          `json:"verdict"`
	Checked    int             `json:"checked"`
	Reason     string          `json:"reason,omitempty"`
	Violations []violationJSON `json:"violations"`
}

type violationJSON struct {
	Tenant      string  `json:"tenant"`
	Method      string  `json:"method"`
	Path        string  `json:"path"`
	Key         string  `json:"key"`
	Intent      string  `json:"intent,omitempty"`
	Ops         []int64 `json:"ops"`
	Explanation string  `json:"explanation"`
	Cause       string  `json:"cause,omitempty"`
}

func checkJSON(reports []fileReport, worst checkers.Verdict) checkReportJSON {
	out := checkReportJSON{Verdict: worst.String(), ExitCode: exitCodeOf(worst), Files: []fileJSON{}}
	for _, r := range reports {
		h := r.History
		f := fileJSON{File: r.File, Verdict: r.Result.Verdict.String(), Scenario: h.Meta.Scenario, Seed: h.Meta.Seed,
			Events: h.Events, Attempts: len(h.Attempts), Effects: len(h.Effects), Faults: len(h.Faults), Truncated: h.Truncated,
			Invariants: []invariantJSON{}}
		for _, p := range r.Result.Results {
			ij := invariantJSON{Name: p.Name, Verdict: p.Verdict.String(), Checked: p.Checked, Reason: p.Reason, Violations: []violationJSON{}}
			for _, v := range p.Violations {
				ij.Violations = append(ij.Violations, violationJSON{Tenant: v.Tenant, Method: v.Method, Path: v.Path, Key: v.Key,
					Intent: v.Intent, Ops: v.Ops, Explanation: v.Explanation, Cause: v.Cause})
			}
			f.Invariants = append(f.Invariants, ij)
		}
		out.Files = append(out.Files, f)
	}
	return out
}

func exitCodeOf(v checkers.Verdict) int {
	switch v {
	case checkers.Violated:
		return ExitViolation
	case checkers.Unknown:
		return ExitInconclusive
	}
	return ExitClean
}
