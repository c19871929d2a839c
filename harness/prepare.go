package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/scenarios"
)

// PrepareExternal points a scenario at the user's service at url (--target)
// and checks that it can run there: the reference oracle cannot read a
// foreign service, and every fault that acts through the scenario's hooks
// must find them. The scenario's target.allow_remote went with its old
// URL: whether url may be remote is the command line's --allow-remote
// (allowRemote) alone, which [Open] is told. It returns what it changed besides the target, for
// the user to read: an effects.url on the scenario's old target origin
// moves with it (the same service's effects endpoint), and the reference
// oracle gives way to none.
func PrepareExternal(s *scenarios.Scenario, url string, allowRemote bool) ([]string, error) {
	old := s.Target.URL
	s.Target = scenarios.Target{URL: url, AllowRemote: allowRemote}
	var notes []string
	if s.Effects.Oracle == "reference" {
		s.Effects.Oracle = "none"
		notes = append(notes, fmt.Sprintf("%s: effects are not read (the reference oracle reads only the bundled service): set effects.oracle to sql or http to judge exactly-once", s.Name))
	}
	if s.Effects.URL != "" && old != "" {
		if moved, ok := moveOrigin(s.Effects.URL, old, url); ok && moved != s.Effects.URL {
			notes = append(notes, fmt.Sprintf("%s: effects.url %s moved to %s with the target", s.Name, s.Effects.URL, moved))
			s.Effects.URL = moved
		}
	}
	return notes, checkHooks(s)
}

// checkHooks refuses a scenario for an external target whose faults need a
// hook it does not set.
func checkHooks(s *scenarios.Scenario) error {
	for i := range s.EffectiveSteps() {
		fs, err := buildFaults(s, i)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		for _, f := range fs {
			var missing []string
			for _, h := range faults.HooksOf(f.fault) {
				if strings.TrimSpace(s.Hooks.Named(h)) == "" {
					missing = append(missing, "hooks."+h)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s: %s on an external target needs %s in the scenario", s.Name, f.spec.Kind, strings.Join(missing, " and "))
			}
		}
	}
	return nil
}

// TargetURL is the one service a set of scenarios targets, for a run
// without an explicit target: one run talks to one external service (behind
// one proxy), or to the local reference ("").
func TargetURL(ss []*scenarios.Scenario) (string, error) {
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

// CheckOracle reads a scenario's effects once before any traffic is sent,
// so that a wrong DSN, URL or query is reported up front and not after a
// run has written to the user's service. The reference's oracle needs a
// started target and is not checked here. The read goes through the
// runner's address gate, every redirect hop included.
func (r *Runner) CheckOracle(ctx context.Context, s *scenarios.Scenario) error {
	if s.Effects.Oracle == "reference" {
		return nil
	}
	o := oracleFor(r.gate(), s, "", false)
	if o == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := o.Effects(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// errNotInvestigated explains why a failing run against a user's service
// is not re-run or shrunk.
var errNotInvestigated = errors.New("not re-run or shrunk: your service remembers this run's keys and effects; replay against a fresh database")
