package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
)

// MaxTextViolations bounds the violations the summary spells out per run and
// invariant; the JSON and HTML reports carry all of them.
const MaxTextViolations = 3

// WriteText prints the human summary: violations first, each with its
// explanation, its ops and the command that replays it; then one line per
// run and invariant.
func WriteText(w io.Writer, rep Report) {
	n := 0
	for _, run := range rep.Runs {
		for _, st := range run.Steps {
			for _, iv := range st.Invariants {
				for k, v := range iv.Violations {
					if k == MaxTextViolations {
						fmt.Fprintf(w, "\n   … and %d more %s violations in this run (all of them: --json, --report)\n", len(iv.Violations)-k, iv.Name)
						break
					}
					n++
					if n == 1 {
						fmt.Fprintln(w, "VIOLATIONS")
					}
					fmt.Fprintf(w, "\n%d. %s — %s%s\n", n, iv.Name, run.Label(), where(v))
					fmt.Fprintf(w, "   %s\n", v.Explanation)
					if len(v.Keys) > 0 {
						fmt.Fprintf(w, "   keys of intent %s, in the order sent: %s\n", v.Intent, keyList(v.Keys))
					}
					if v.Cause != "" {
						fmt.Fprintf(w, "   likely cause: %s\n", v.Cause)
					}
					fmt.Fprintf(w, "   ops %s", Ops(v.Ops))
					if run.History != "" {
						fmt.Fprintf(w, " in %s", run.History)
					}
					fmt.Fprintln(w)
					if run.Replay != "" {
						fmt.Fprintf(w, "   replay: %s\n", run.Replay)
					}
				}
			}
		}
	}
	if n > 0 {
		fmt.Fprintln(w)
	}
	for _, run := range rep.Runs {
		status := "PASS"
		switch {
		case run.Verdict == checkers.EnvironmentError.String():
			status = "ERROR"
		case run.Met:
		case run.Verdict == "unknown":
			status = "UNKNOWN"
		default:
			status = "FAIL"
		}
		if run.Error != "" {
			status = "ERROR"
		}
		var about []string
		if run.Seed != 0 || run.File == "" || run.File != run.History {
			// A checked recording has no seed: real traffic was not drawn
			// from one, and "seed 0" would offer a replay that is none.
			about = append(about, fmt.Sprintf("seed %d", run.Seed))
		}
		if run.Requests > 0 {
			about = append(about, fmt.Sprintf("%d requests, %s", run.Requests, time.Duration(run.ElapsedMS)*time.Millisecond))
		}
		fmt.Fprintf(w, "%-5s %s", status, run.Label())
		if len(about) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(about, ", "))
		}
		fmt.Fprintln(w)
		if run.Error != "" {
			fmt.Fprintf(w, "      error: %s\n", run.Error)
		}
		for _, st := range run.Steps {
			if len(run.Steps) > 1 || st.Expect != "clean" {
				fmt.Fprintf(w, "      step %q expects %s: %s\n", st.Name, st.Expect, map[bool]string{true: "met", false: "NOT met"}[st.Met])
			}
			if st.Reason != "" {
				fmt.Fprintf(w, "      %s: %s\n", strings.ToUpper(st.Verdict), st.Reason)
			}
			for _, iv := range st.Invariants {
				fmt.Fprintln(w, invariantLine(iv))
			}
		}
		if run.Repro != "" {
			fmt.Fprintf(w, "      %s\n", run.Repro)
		}
		if run.Shrunk != nil {
			fmt.Fprintf(w, "      shrunk from %d to %d intents in %d runs; minimal plan:\n", run.Shrunk.From, run.Shrunk.To, run.Shrunk.Runs)
			for _, l := range strings.Split(strings.TrimRight(run.Shrunk.Plan, "\n"), "\n") {
				fmt.Fprintf(w, "        %s\n", l)
			}
		}
		if !run.Met && run.Replay != "" {
			fmt.Fprintf(w, "      replay: %s\n", run.Replay)
		}
		if run.History != "" && run.History != run.File {
			fmt.Fprintf(w, "      history: %s\n", run.History)
		}
	}
}

// Label names a run as the text report and the HTML page head it: its
// scenario (or the history file it checked) and its mutant.
func (run Run) Label() string {
	s := run.Scenario
	switch {
	case run.File != "" && run.File == run.History:
		// A checked history file: the file is what the reader looks for.
		s = run.File
		if run.Scenario != "" {
			s += " (scenario " + run.Scenario + ")"
		}
	case s == "":
		s = run.File
	}
	if run.Mutant != "" {
		s += " [mutant " + run.Mutant + "]"
	}
	return s
}

func where(v Violation) string {
	var parts []string
	if v.Tenant != "" {
		parts = append(parts, "tenant "+v.Tenant)
	}
	if v.Key != "" {
		parts = append(parts, "key "+v.Key)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// Ops writes a violation's op numbers as "1, 2, 3".
func Ops(ops []int64) string {
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = fmt.Sprint(o)
	}
	return strings.Join(parts, ", ")
}

// OrDash writes an empty field as "—", so a table's cell is never blank.
func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// invariantLine is one invariant's summary line. An invariant that judged
// nothing says so instead of PASS.
func invariantLine(iv Invariant) string {
	if iv.Verdict == NotExercised {
		return fmt.Sprintf("      %-13s %-20s %s", "NOT EXERCISED", iv.Name, iv.Reason)
	}
	line := fmt.Sprintf("      %-13s %-20s checked %d", strings.ToUpper(iv.Verdict), iv.Name, iv.Checked)
	if k := len(iv.Violations); k > 0 {
		line += fmt.Sprintf(", %d violation%s", k, map[bool]string{true: "", false: "s"}[k == 1])
	}
	if iv.Reason != "" {
		line += " — " + iv.Reason
	}
	return line
}

// keyList writes a key sequence as "k-a → k-b", a keyless attempt as
// "(none)".
func keyList(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = OrNone(k)
	}
	return strings.Join(parts, " → ")
}

// OrNone writes a key as itself, an empty one (a keyless attempt) as
// "(none)": the text report and the HTML page name keys alike.
func OrNone(key string) string {
	if key == "" {
		return "(none)"
	}
	return key
}
