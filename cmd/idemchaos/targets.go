package main

import (
	"context"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

// retarget points a scenario at the user's service at url (--target).
// The scenario's target.allow_remote went with its old URL: whether url
// may be remote is the command line's --allow-remote (allowRemote) alone,
// which harness.Open is told. It returns
// what it changed besides the target, for the user to read: an effects.url
// on the scenario's old target origin moves with it (the same service's
// effects endpoint), and the reference oracle, which cannot read a foreign
// service, gives way to none. (harness.Open then checks that every fault
// that acts through the scenario's hooks finds them.)
func retarget(s *scenarios.Scenario, url string, allowRemote bool) []string {
	old := s.Target.URL
	s.Target = scenarios.Target{URL: url, AllowRemote: allowRemote}
	var notes []string
	if s.Effects.Oracle == "reference" {
		s.Effects.Oracle = "none"
		notes = append(notes, fmt.Sprintf("%s: effects are not read (the reference oracle reads only the bundled service): set effects.oracle to sql or http to judge exactly-once", s.Name))
	}
	if s.Effects.URL != "" && old != "" {
		if moved, ok := harness.MoveOrigin(s.Effects.URL, old, url); ok && moved != s.Effects.URL {
			notes = append(notes, fmt.Sprintf("%s: effects.url %s moved to %s with the target", s.Name, s.Effects.URL, moved))
			s.Effects.URL = moved
		}
	}
	return notes
}

// oneTarget is the one service a set of scenarios targets, for a run
// without --target: one run talks to one external service (behind one
// proxy), or to the local reference ("").
func oneTarget(ss []*scenarios.Scenario) (string, error) {
	var want, first string
	reference := ""
	for _, s := range ss {
		switch {
		case s.Target.URL == "":
			reference = s.Name
		case want == "":
			want, first = s.Target.URL, s.Name
		case s.Target.URL != want:
			return "", fmt.Errorf("%s targets %s but %s targets %s: run them separately, or pass --target", first, want, s.Name, s.Target.URL)
		}
	}
	if want != "" && reference != "" {
		return "", fmt.Errorf("%s targets %s but %s targets the reference: run them separately", first, want, reference)
	}
	return want, nil
}

// checkOracle reads a scenario's effects once before any traffic is sent,
// so that a wrong DSN, URL or query is reported up front and not after a
// run has written to the user's service. The reference's oracle needs a
// started target and is not checked here. The read goes through the
// address gate of the run's --allow-remote, every redirect hop included.
func checkOracle(ctx context.Context, s *scenarios.Scenario, allowRemote bool) error {
	o, err := harness.ScenarioOracle(ctx, s, allowRemote)
	if err != nil || o == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := o.Effects(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// checkMutant refuses an unknown --mutant before anything starts
// ([harness.CorrectService] names the correct service).
func checkMutant(name string) error {
	if name == harness.CorrectService {
		return nil
	}
	_, err := reference.LookupMutant(name)
	return err
}

// matrixMutants names the mutants a matrix limited to want runs: want
// itself, or every mutant when it is empty, for harness.OpenOptions.Mutants,
// so the environment has what they need.
func matrixMutants(want []string) []string {
	if len(want) > 0 {
		return want
	}
	var out []string
	for _, m := range reference.Mutants() {
		out = append(out, m.Name)
	}
	return out
}
