package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/idemchaos/idemchaos/checkers"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test suite per run and one test case per invariant
// (scenario × invariant). A violation is a failure carrying its
// explanations; an unknown verdict or a setup error is an error, never a pass;
// an invariant that judged nothing is skipped ("not exercised").
func WriteJUnit(w io.Writer, rep Report) error {
	out := junitSuites{Name: "idemchaos"}
	for _, run := range rep.Runs {
		s := junitSuite{Name: run.Label(), Time: float64(run.ElapsedMS) / 1000}
		class := "idemchaos." + run.Scenario
		if run.Mutant != "" {
			class += ".mutant-" + run.Mutant
		}
		if run.Error != "" {
			s.Cases = append(s.Cases, junitCase{Name: "run", Classname: class, Error: &junitProblem{Message: run.Error, Type: "setup"}})
		}
		if run.Verdict == checkers.EnvironmentError.String() {
			// One case says the harness could not do its job; the
			// invariants below say they were not judged.
			s.Cases = append(s.Cases, junitCase{Name: "environment", Classname: class, Error: &junitProblem{Message: run.EnvironmentReason(), Type: "environment"}})
		}
		if run.Expect == "caught" && !run.Met && run.Error == "" && run.Verdict != checkers.EnvironmentError.String() {
			s.Cases = append(s.Cases, junitCase{Name: "caught", Classname: class, Failure: &junitProblem{
				Message: "mutant " + run.Mutant + " not caught: no invariant was violated", Type: "missed"}})
		}
		for _, st := range run.Steps {
			for _, iv := range st.Invariants {
				c := junitCase{Name: iv.Name, Classname: class, SystemOut: fmt.Sprintf("checked %d; history %s; replay: %s", iv.Checked, run.History, run.Replay)}
				if st.Name != "" && len(run.Steps) > 1 {
					c.Name = st.Name + "/" + iv.Name
				}
				// A demo run against a mutant expects a catch: any violation.
				expected := st.Expect == iv.Name || (run.Expect == "caught" && iv.Verdict == "violation")
				switch {
				case iv.Verdict == "violation" && !expected:
					var msgs []string
					for _, v := range iv.Violations {
						line := v.Explanation
						if v.Cause != "" {
							line += " Likely cause: " + v.Cause + "."
						}
						msgs = append(msgs, line)
					}
					c.Failure = &junitProblem{Message: firstLine(msgs), Type: "violation", Text: strings.Join(msgs, "\n") + "\nreplay: " + run.Replay}
				case iv.Verdict != "violation" && expected:
					c.Failure = &junitProblem{Message: "expected a " + iv.Name + " violation, saw " + iv.Verdict, Type: "missed"}
				case iv.Verdict == "unknown":
					c.Error = &junitProblem{Message: "inconclusive: " + iv.Reason, Type: "unknown"}
				case iv.Verdict == NotExercised:
					c.Skipped = &junitSkipped{Message: "not exercised: " + iv.Reason}
				}
				s.Cases = append(s.Cases, c)
			}
		}
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Error != nil {
				s.Errors++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%s (and %d more)", msgs[0], len(msgs)-1)
}

// EnvironmentReason is why the harness could not do its job in this run:
// the reason of its first environment-error step, else the run's error.
func (run Run) EnvironmentReason() string {
	for _, st := range run.Steps {
		if st.Verdict == checkers.EnvironmentError.String() {
			return st.Reason
		}
	}
	return run.Error
}
