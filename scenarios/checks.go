package scenarios

import (
	"fmt"

	"github.com/idemchaos/idemchaos/checkers"
)

// Profile returns the status-code contract the scenario's checkers judge
// by: a built-in profile (ietf, stripe) or the custom codes of Contract.
func (s *Scenario) Profile() (checkers.Profile, error) {
	if s.ContractOverride != nil {
		return s.ContractOverride.Profile, nil
	}
	if c := s.Contract; c.Repeat == checkers.RepeatRefuse {
		// The loader filled its codes (fill).
		return checkers.Profile{Name: "custom", MissingKey: c.MissingKey, Reuse: c.Reuse, InFlight: c.InFlight, Refuse: c.RepeatStatus}, nil
	}
	switch s.Contract.Profile {
	case "", defaultProfile:
		return checkers.DefaultProfile(), nil
	case "custom":
		return checkers.Profile{Name: "custom", MissingKey: s.Contract.MissingKey, Reuse: s.Contract.Reuse, InFlight: s.Contract.InFlight}, nil
	}
	p, err := checkers.ProfileByName(s.Contract.Profile)
	if err != nil {
		return checkers.Profile{}, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return p, nil
}

// CheckerContract returns the contract the scenario's checkers judge by:
// its profile, payload fingerprint, replay-identical's headers and
// eventually-decided's bound when given (the checkers' defaults
// otherwise). A run writes it into its history, so that a later check
// judges alike.
func (s *Scenario) CheckerContract() (checkers.Contract, error) {
	if s.ContractOverride != nil {
		return *s.ContractOverride, nil
	}
	p, err := s.Profile()
	if err != nil {
		return checkers.Contract{}, err
	}
	c := checkers.DefaultContract()
	c.Profile, c.Fingerprint, c.MaxKeyLength = p, s.Contract.Fingerprint, s.Contract.MaxKeyLength
	for _, inv := range s.Invariants {
		if inv.Name == "replay-identical" && len(inv.Headers) > 0 {
			c.ReplayHeaders = append([]string{}, inv.Headers...)
		}
		if inv.Name == "eventually-decided" && inv.Bound > 0 {
			c.DecisionBound = inv.Bound
		}
	}
	return c, nil
}

// CheckerOptions returns the checker options that judge by
// [Scenario.CheckerContract].
func (s *Scenario) CheckerOptions() ([]checkers.Option, error) {
	c, err := s.CheckerContract()
	if err != nil {
		return nil, err
	}
	return []checkers.Option{checkers.WithContract(c)}, nil
}

// Checker returns the scenario's invariants as one composite checker
// ([checkers.All]), configured by [Scenario.CheckerOptions].
func (s *Scenario) Checker() (checkers.Checker, error) {
	opts, err := s.CheckerOptions()
	if err != nil {
		return nil, err
	}
	names := s.InvariantNames()
	cs := make([]checkers.Checker, 0, len(names))
	for _, n := range names {
		c, err := checkers.ByName(n, opts...)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		cs = append(cs, c)
	}
	return checkers.All(cs...), nil
}

// InvariantNames lists the scenario's invariants by name, in file order
// (all seven, in DESIGN order, when the file lists none).
func (s *Scenario) InvariantNames() []string {
	if len(s.Invariants) == 0 {
		return checkers.Names()
	}
	out := make([]string, len(s.Invariants))
	for i, inv := range s.Invariants {
		out[i] = inv.Name
	}
	return out
}

// EffectiveSteps returns the steps to run: the scenario's steps, or, when
// it has none, one implicit step named after the scenario that sends its
// traffic under its faults and expects every invariant to hold. A step
// without a faults key gets the scenario's. The steps returned are complete
// (traffic merged, faults inherited, defaults filled), so a caller needs
// nothing else from the Scenario to run one.
func (s *Scenario) EffectiveSteps() []Step {
	if len(s.Steps) > 0 {
		steps := append([]Step(nil), s.Steps...)
		for i := range steps {
			// The one place a step without a faults key inherits the
			// scenario's ("faults: []" means none).
			if steps[i].Faults == nil {
				steps[i].Faults = s.Faults
			}
		}
		return steps
	}
	tr := s.Traffic
	return []Step{{Name: s.Name, Traffic: &tr, Faults: s.Faults, Expect: "clean"}}
}
