package bench

import (
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
)

// Verdicts of one run of the correct reference.
const (
	VerdictPass      = "pass"
	VerdictViolation = "violation"
	// VerdictUnknown is an inconclusive check; VerdictError a run that
	// could not be judged at all (both count as inconclusive).
	VerdictUnknown = "inconclusive"
	VerdictError   = "error"
)

// RunVerdict is the verdict of one run of the correct reference, with
// what explains it when it is not a pass.
type RunVerdict struct {
	Scenario string
	Seed     int64
	Verdict  string
	// Reason lists the failed checks (or the error), "; "-joined.
	Reason   string
	History  string
	Requests int64
	Elapsed  time.Duration
}

// verdictOf judges one run of the correct reference: it must pass every
// check of every step.
func verdictOf(name string, seed int64, o *harness.Outcome, err error) RunVerdict {
	v := RunVerdict{Scenario: name, Seed: seed, Verdict: VerdictPass}
	if o != nil {
		v.History, v.Requests, v.Elapsed = o.HistoryPath, o.Requests, o.Elapsed
	}
	var reasons []string
	if o != nil {
		for _, st := range o.Steps {
			reasons = append(reasons, st.Result.Failures()...)
		}
	}
	switch {
	case o != nil && len(o.Caught()) > 0:
		v.Verdict = VerdictViolation
	case err != nil:
		v.Verdict = VerdictError
		reasons = append(reasons, err.Error())
	case o == nil || len(o.Steps) == 0:
		v.Verdict = VerdictError
		reasons = append(reasons, "the run judged nothing")
	case o.Environment() != "":
		v.Verdict = VerdictError // its reason is among the steps' failures
	case o.Verdict() != checkers.Pass || !o.Met():
		v.Verdict = VerdictUnknown
	}
	if err != nil && v.Verdict == VerdictViolation {
		reasons = append(reasons, err.Error())
	}
	v.Reason = strings.Join(reasons, "; ")
	return v
}
