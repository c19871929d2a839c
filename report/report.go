package report

import (
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
)

// ShapeVersion is the version of the JSON report's shape. Fields are only
// added within a version.
const ShapeVersion = 1

// Report is the JSON report of a command (run, demo, check).
type Report struct {
	Tool     string `json:"tool"`
	Version  int    `json:"version"`
	Verdict  string `json:"verdict"` // pass, violation, unknown, environment-error
	ExitCode int    `json:"exit_code"`
	Runs     []Run  `json:"runs"`
	// Matrix is set by demo.
	Matrix *Matrix `json:"matrix,omitempty"`
	// Error says why the command failed after its runs (an output file
	// that could not be written); ExitCode is then 3.
	Error string `json:"error,omitempty"`
	// Shard is set by run --shard: which part of the whole this report is.
	Shard *Shard `json:"shard,omitempty"`
	// Merged is set by merge: the shard reports it joined.
	Merged []string `json:"merged,omitempty"`
}

// Shard says which part of a sharded run a report covers and what the
// whole was, so that merge can recompute every shard's pairs and tell a
// missing, doubled or cut-short shard from a complete set.
type Shard struct {
	Index int `json:"index"` // 1 to Total
	Total int `json:"total"`
	// Scenarios are the scenario names in the order given: with Seeds they
	// define the pairs, split round-robin (internal/shard).
	Scenarios []string `json:"scenarios"`
	// Seeds is the whole run's seed list, ranges folded ("1-400").
	Seeds  string `json:"seeds"`
	Mutant string `json:"mutant,omitempty"`
	// Pairs is how many scenario × seed pairs this shard was given; Runs
	// lists those it ran.
	Pairs int `json:"pairs"`
}

// Run is one scenario run (or one checked history file).
type Run struct {
	Scenario  string `json:"scenario"`
	File      string `json:"file,omitempty"`
	Seed      int64  `json:"seed"`
	Mutant    string `json:"mutant,omitempty"`
	History   string `json:"history,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms"`
	Requests  int64  `json:"requests"`
	Verdict   string `json:"verdict"`
	Met       bool   `json:"met"` // every step did what it expected
	// Expect is "caught" for a demo run against a mutant: a violation of
	// any invariant is then the expected outcome, and met says one came.
	Expect string  `json:"expect,omitempty"`
	Steps  []Step  `json:"steps"`
	Replay string  `json:"replay,omitempty"`
	Repro  string  `json:"reproducibility,omitempty"` // "reproducible (3/3)" or "intermittent (1/3)"
	Shrunk *Shrunk `json:"shrunk,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// Step is one step of a run and its verdicts.
type Step struct {
	Name    string `json:"name,omitempty"`
	Expect  string `json:"expect"`
	Met     bool   `json:"met"`
	Verdict string `json:"verdict"`
	// Reason says why a step is inconclusive as a whole (e.g. nothing
	// succeeded, so nothing could be judged).
	Reason     string      `json:"reason,omitempty"`
	Invariants []Invariant `json:"invariants"`
}

// NotExercised is the verdict of an invariant that passed without judging
// anything (checked 0): no evidence either way, so never shown as a pass.
const NotExercised = "not-exercised"

// Invariant is one checker's verdict.
type Invariant struct {
	Name string `json:"name"`
	// Verdict is pass, violation, unknown or not-exercised.
	Verdict    string      `json:"verdict"`
	Checked    int         `json:"checked"`
	Reason     string      `json:"reason,omitempty"`
	Violations []Violation `json:"violations"`
}

// Violation is one broken instance, in plain words.
type Violation struct {
	Tenant      string  `json:"tenant"`
	Method      string  `json:"method"`
	Path        string  `json:"path"`
	Key         string  `json:"key"`
	Intent      string  `json:"intent,omitempty"`
	Ops         []int64 `json:"ops"`
	Explanation string  `json:"explanation"`
	Cause       string  `json:"cause,omitempty"`
	// Keys are the idempotency keys the violation's intent sent, in the
	// order sent, one entry per change ("k-a", "k-b", "k-a"; "" for a
	// keyless attempt), in a client run whose intent changed its key: the
	// re-keying in one line. Nil otherwise, and past [MaxKeySequence]
	// changes (the explanation and the HTML report say it then).
	Keys []string `json:"keys,omitempty"`
}

// MaxKeySequence caps [Violation.Keys]: a longer sequence is no longer a
// line a reader takes in.
const MaxKeySequence = 6

// Shrunk is the minimal failing plan found.
type Shrunk struct {
	From int    `json:"from_intents"`
	To   int    `json:"to_intents"`
	Runs int    `json:"runs"`
	Plan string `json:"plan"`
}

// Matrix is demo's catch matrix.
type Matrix struct {
	Reference MatrixRow   `json:"reference"`
	Mutants   []MatrixRow `json:"mutants"`
	ElapsedMS int64       `json:"elapsed_ms"`
	OK        bool        `json:"ok"`
}

// MatrixRow is one system of the matrix.
type MatrixRow struct {
	Mutant    string   `json:"mutant,omitempty"`
	Pitfall   string   `json:"pitfall,omitempty"`
	Expected  string   `json:"expected_invariant,omitempty"`
	Caught    bool     `json:"caught"`
	Clean     bool     `json:"clean"`
	By        []string `json:"caught_by"`
	Scenario  string   `json:"scenario,omitempty"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Requests  int64    `json:"requests"`
	Runs      int      `json:"runs"`
	// Clean counts the runs in which every expectation held.
	CleanRuns int    `json:"clean_runs"`
	Error     string `json:"error,omitempty"`
}

// FromOutcome turns a run into its report form.
func FromOutcome(o *harness.Outcome) Run {
	r := Run{Scenario: o.Scenario.Name, File: o.Scenario.File, Seed: o.Seed, Mutant: o.Mutant, History: o.HistoryPath,
		ElapsedMS: o.Elapsed.Milliseconds(), Requests: o.Requests, Verdict: o.Verdict().String(), Met: o.Met(),
		Replay: o.ReplayCommand()}
	for _, s := range o.Steps {
		r.Steps = append(r.Steps, Step{Name: s.Name, Expect: s.Expect, Met: s.Met, Verdict: s.Result.Verdict.String(),
			Reason: s.Result.Reason, Invariants: invariants(s.Result, keySequences(o.History))})
	}
	return r
}

// FromJudgement turns an offline check of one history file, judged step
// by step as its run was ([checkers.Judge]), into a run: the same steps,
// verdicts and expectations met as the run's own report, when h is the
// history of a run.
func FromJudgement(file string, h *history.History, j checkers.Judgement) Run {
	return fromJudgement(file, h, j, keySequences(h))
}

func fromJudgement(file string, h *history.History, j checkers.Judgement, keys func(intent string) []string) Run {
	r := Run{Scenario: h.Meta.Scenario, File: file, Seed: h.Meta.Seed, History: file, Verdict: j.Verdict.String(), Met: j.Met()}
	for _, s := range j.Steps {
		r.Steps = append(r.Steps, Step{Name: s.Name, Expect: s.Expect, Met: s.Met, Verdict: s.Result.Verdict.String(),
			Reason: s.Result.Reason, Invariants: invariants(s.Result, keys)})
	}
	return r
}

// FromCheck turns an offline check of one history file into a run.
func FromCheck(file string, h *history.History, res checkers.Result) Run {
	return Run{Scenario: h.Meta.Scenario, File: file, Seed: h.Meta.Seed, History: file, Verdict: res.Verdict.String(),
		Met: res.Verdict == checkers.Pass, Steps: []Step{{Expect: "clean", Met: res.Verdict == checkers.Pass,
			Verdict: res.Verdict.String(), Invariants: invariants(res, keySequences(h))}}}
}

// invariants turns a result's verdicts into their report form; keys, when
// not nil, gives a violation's intent's key sequence ([Violation.Keys]).
func invariants(res checkers.Result, keys func(intent string) []string) []Invariant {
	parts := res.Results
	if len(parts) == 0 {
		parts = []checkers.Result{res}
	}
	out := make([]Invariant, 0, len(parts))
	for _, p := range parts {
		iv := Invariant{Name: p.Name, Verdict: p.Verdict.String(), Checked: p.Checked, Reason: p.Reason, Violations: []Violation{}}
		if p.Verdict == checkers.Pass && p.Checked == 0 {
			// Nothing was judged: that is no evidence of correctness.
			iv.Verdict = NotExercised
			if iv.Reason == "" {
				iv.Reason = "nothing in the history exercised it"
			}
		}
		for _, v := range p.Violations {
			iv.Violations = append(iv.Violations, Violation{Tenant: v.Tenant, Method: v.Method, Path: v.Path, Key: v.Key,
				Intent: v.Intent, Ops: v.Ops, Explanation: v.Explanation, Cause: v.Cause})
			if keys != nil && v.Intent != "" {
				iv.Violations[len(iv.Violations)-1].Keys = keys(v.Intent)
			}
		}
		out = append(out, iv)
	}
	return out
}

// keySequences returns, for a client run's history, the function that
// gives an intent's key sequence ([Violation.Keys]), nil for any other
// history. The sequences are computed on the first call, in one pass.
func keySequences(h *history.History) func(intent string) []string {
	if h == nil || !h.Client() {
		return nil
	}
	var seqs map[string][]string
	return func(intent string) []string {
		if seqs == nil {
			seqs = history.KeySequences(h)
		}
		return capped(seqs[intent])
	}
}

// capped drops a key sequence longer than [MaxKeySequence].
func capped(seq []string) []string {
	if len(seq) > MaxKeySequence {
		return nil
	}
	return seq
}

// FromPartitioned turns the judgement of a history checked partition by
// partition into a run, as [FromJudgement] does for one loaded whole: h
// holds only its meta event and counts, and seqs the key sequences the
// partitions found ([history.KeySequences]).
func FromPartitioned(file string, h *history.History, j checkers.Judgement, seqs map[string][]string) Run {
	var keys func(string) []string
	if h.Client() {
		keys = func(intent string) []string { return capped(seqs[intent]) }
	}
	return fromJudgement(file, h, j, keys)
}

// New assembles a report and its exit code from runs: 3 when the
// environment failed in any run, whatever the others found; else 0 when
// every run met its expectations, 2 when the worst was unknown, 1 for a
// violation.
func New(runs []Run) Report {
	r := Report{Tool: "idemchaos", Version: ShapeVersion, Runs: runs}
	if r.Runs == nil {
		r.Runs = []Run{}
	}
	worst := checkers.Pass
	met := true
	for _, run := range runs {
		met = met && run.Met && run.Error == ""
		switch run.Verdict {
		case "environment-error":
			worst = max(worst, checkers.EnvironmentError)
		case "violation":
			worst = max(worst, checkers.Violated)
		case "unknown":
			worst = max(worst, checkers.Unknown)
		}
	}
	r.Verdict = worst.String()
	switch {
	case worst == checkers.EnvironmentError:
		r.ExitCode = 3
	case met:
		r.ExitCode = 0
	case worst == checkers.Unknown:
		r.ExitCode = 2
	default:
		r.ExitCode = 1
	}
	return r
}

// Failed is the report of a command the environment stopped before it had
// a verdict (demo's dead database): verdict environment-error, exit 3,
// and why.
func Failed(err error) Report {
	r := New(nil)
	r.Verdict, r.ExitCode, r.Error = checkers.EnvironmentError.String(), 3, err.Error()
	return r
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
