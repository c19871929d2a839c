package scenarios

import (
	"fmt"
	"slices"

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
// eventually-decided's bound and forward-only's states when given (the checkers' defaults
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
	c.MaxDeliveries = s.Contract.MaxDeliveries
	for _, inv := range s.Invariants {
		if inv.Name == "replay-identical" && len(inv.Headers) > 0 {
			c.ReplayHeaders = append([]string{}, inv.Headers...)
		}
		if inv.Name == "eventually-decided" && inv.Bound > 0 {
			c.DecisionBound = inv.Bound
		}
		if inv.Name == "forward-only" && len(inv.States) > 0 {
			c.States = append([]string{}, inv.States...)
		}
	}
	if c.States == nil {
		// A provider's events are its order of states.
		c.States = s.WebhookStates()
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
// (when the file lists none: all seven, in DESIGN order, or a webhook
// scenario's three).
func (s *Scenario) InvariantNames() []string {
	if len(s.Invariants) == 0 && s.HasWebhook() {
		return slices.Clone(WebhookInvariants)
	}
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

// WebhookInvariants are what a scenario with a webhook step judges when it
// lists none: each provider event applied once, each payment's state only
// forward, every forged event refused. The server suite's replay rules do
// not apply: a provider reads nothing of an answer but its status.
var WebhookInvariants = []string{"exactly-once", "forward-only", "forged-refused"}

// WebhookPlaceholders are the fields a webhook event's body is filled with.
var WebhookPlaceholders = []string{"event", "type", "state", "payment", "amount", "created"}

// HasWebhook says a step of the scenario plays a payment provider.
func (s *Scenario) HasWebhook() bool { return s.FirstWebhook() != nil }

// FirstWebhook is the first webhook step's provider, nil when none.
func (s *Scenario) FirstWebhook() *Webhook {
	for i := range s.Steps {
		if w := s.Steps[i].Webhook; w != nil {
			return w
		}
	}
	return nil
}

// WebhookEvents are a webhook's events per payment: its own, or the
// default (the reference's paid and fulfilled against the reference).
func (s *Scenario) WebhookEvents(w *Webhook) []string {
	switch {
	case len(w.Events) > 0:
		return slices.Clone(w.Events)
	case s.Target.Reference != nil:
		return []string{"paid", "fulfilled"}
	}
	return []string{"created", "paid", "refunded"}
}

// WebhookStates is forward-only's order of states a webhook step declares
// (nil without one): its events, after the reference's pending against
// the reference, whose orders exist before any event.
func (s *Scenario) WebhookStates() []string {
	w := s.FirstWebhook()
	if w == nil {
		return nil
	}
	ev := s.WebhookEvents(w)
	if s.Target.Reference != nil && !slices.Contains(ev, "pending") {
		ev = append([]string{"pending"}, ev...)
	}
	return ev
}
