// Package catchmatrix runs a suite against the correct reference and each
// of its mutants ([Run]): the catch matrix of `idemchaos demo` and of the
// benchmarks' detection figures. A mutant is caught only by its expected
// invariant.
package catchmatrix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Row is one system's line of the catch matrix: the correct reference
// (Mutant "") or one mutant.
type Row struct {
	Mutant  string
	Pitfall string
	// Expected is the invariant the mutant's pitfall should trip.
	Expected string
	// Caught says a scenario violated Expected (for a mutant): a run that
	// violates only other invariants is not a catch, since it does not
	// show the mutant's pitfall. For the correct reference, Clean says
	// every scenario passed.
	Caught bool
	Clean  bool
	// By lists the invariants violated by the catching run; Scenario names it.
	By       []string
	Scenario string
	// Elapsed and Requests count everything sent to this system until the
	// catch (or until the suite ran out).
	Elapsed  time.Duration
	Requests int64
	// Runs are the outcomes, in order.
	Runs []*harness.Outcome
	// Err is set when a run could not be judged.
	Err error
}

// Matrix is the catch matrix of a suite.
type Matrix struct {
	Reference Row
	Mutants   []Row
	Elapsed   time.Duration
}

// OK says the reference was clean and every mutant was caught.
func (m *Matrix) OK() bool {
	if !m.Reference.Clean || m.Reference.Err != nil {
		return false
	}
	for _, r := range m.Mutants {
		if !r.Caught {
			return false
		}
	}
	return true
}

// Options tune [Run].
type Options struct {
	Seed int64
	// Mutants limits the mutants (default: all of them).
	Mutants []string
	// AfterRun is called after every run (progress).
	AfterRun func(row *Row, o *harness.Outcome)
	// SkipReference skips the pass over the correct reference: the matrix
	// then measures detection alone (idemchaos bench runs it once per seed,
	// and a mutant's time to its first catch must not include the
	// reference's runs). Matrix.Reference stays empty and [Matrix.OK] is
	// false, since nothing showed the reference clean.
	SkipReference bool
	_             struct{}
}

// Run runs, with r, every scenario of the suite against the correct
// reference (each must be clean; see [Options.SkipReference]) and, for each mutant, runs the suite until
// one scenario catches it — the scenario designed for the mutant first,
// then those that check its expected invariant, so a catch comes early. A
// catch is a violation of the mutant's expected invariant.
func Run(ctx context.Context, r *harness.Runner, suite []*scenarios.Scenario, opts Options) (*Matrix, error) {
	start := time.Now()
	m := &Matrix{Reference: Row{Clean: true}}
	ref := &m.Reference
	refSuite := suite
	if opts.SkipReference {
		refSuite, ref.Clean = nil, false
	}
	for _, s := range refSuite {
		o, err := r.Run(ctx, s, harness.RunOptions{Seed: opts.Seed, Mutant: harness.CorrectService})
		if err := account(ref, o, err); err != nil {
			return m, err
		}
		if o != nil && !o.Met() {
			ref.Clean = false
			ref.By = append(ref.By, o.Caught()...)
			if ref.Scenario == "" {
				ref.Scenario = s.Name
			}
		}
		if opts.AfterRun != nil {
			opts.AfterRun(ref, o)
		}
	}
	want := map[string]bool{}
	for _, n := range opts.Mutants {
		want[n] = true
	}
	for _, mu := range reference.Mutants() {
		if len(want) > 0 && !want[mu.Name] {
			continue
		}
		row := Row{Mutant: mu.Name, Pitfall: mu.Pitfall, Expected: mu.Invariant}
		for _, s := range orderFor(suite, mu.Invariant, scenarios.DesignedFor(mu.Name)) {
			o, err := r.Run(ctx, s, harness.RunOptions{Seed: opts.Seed, Mutant: mu.Name})
			if err := account(&row, o, err); err != nil {
				m.Mutants = append(m.Mutants, row)
				return m, err
			}
			if opts.AfterRun != nil {
				opts.AfterRun(&row, o)
			}
			if row.catches(o) {
				row.Caught, row.By, row.Scenario = true, o.Caught(), s.Name
				break
			}
		}
		m.Mutants = append(m.Mutants, row)
	}
	m.Elapsed = time.Since(start)
	return m, nil
}

// catches says whether a run of the row's mutant violated the invariant
// the mutant is expected to trip.
func (row *Row) catches(o *harness.Outcome) bool {
	return o != nil && slices.Contains(o.Caught(), row.Expected)
}

// account adds a run to a row. A cancelled context ends the matrix, and
// so does an environment error — a run that failed, or whose history
// says the harness could not do its job: every later run would meet the
// same dead database or full disk, and a mutant "missed" for it would
// read as a gap in detection.
func account(row *Row, o *harness.Outcome, err error) error {
	if o != nil {
		row.Runs = append(row.Runs, o)
		row.Elapsed += o.Elapsed
		row.Requests += o.Requests
	}
	if err == nil && o != nil {
		if why := o.Environment(); why != "" {
			err = fmt.Errorf("%w: %s", harness.ErrSetup, why)
		}
	}
	if err == nil {
		return nil
	}
	if row.Err == nil {
		row.Err = err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	who := "the reference"
	if row.Mutant != "" {
		who = "mutant " + row.Mutant
	}
	if o != nil && o.Scenario != nil {
		who = o.Scenario.Name + " against " + who
	}
	return fmt.Errorf("%s: %w", who, err)
}

// orderFor puts the scenario designed for the mutant first, then those that
// check its invariant, then the rest.
func orderFor(suite []*scenarios.Scenario, inv, designed string) []*scenarios.Scenario {
	var first, rest []*scenarios.Scenario
	for _, s := range suite {
		if s.Name == designed {
			first = append([]*scenarios.Scenario{s}, first...)
			continue
		}
		checks := len(s.Invariants) == 0
		for _, i := range s.Invariants {
			checks = checks || i.Name == inv
		}
		if checks {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(first, rest...)
}
