package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/internal/httptoken"
	"github.com/idemchaos/idemchaos/scenarios"
)

// contractFlags are the flags that set the idempotency contract a service
// is judged by. `check` and `run` take the same ones; a flag that is not
// given leaves the contract's field as it was (the history's, the
// scenario's, or the default).
type contractFlags struct {
	fs            *pflag.FlagSet
	profile       string
	missingKey    int
	reuse         int
	inFlight      int
	fingerprint   string
	headers       []string
	ignore        []string
	decisionBound time.Duration
	retentionGap  time.Duration
}

// register adds the contract flags to fs. profileEnv is the environment's
// profile (IDEMCHAOS_PROFILE), "" when unset.
func (f *contractFlags) register(fs *pflag.FlagSet, profileEnv string) {
	f.fs = fs
	fs.StringVar(&f.profile, "profile", profileEnv, "status contract profile: ietf, stripe or custom (custom needs --reuse and --in-flight; env IDEMCHAOS_PROFILE)")
	fs.IntVar(&f.missingKey, "missing-key", 0, "status for a request without a key (0: executed without idempotency); implies --profile custom")
	fs.IntVar(&f.reuse, "reuse", 0, "status for a key reused with another payload; implies --profile custom")
	fs.IntVar(&f.inFlight, "in-flight", 0, "status for a duplicate while the first is running; implies --profile custom")
	fs.StringVar(&f.fingerprint, "fingerprint", "", "how the service compares payloads: strict (bytes), canonical (parsed JSON) or either (default: either answer for a reformatted body)")
	fs.StringSliceVar(&f.headers, "headers", nil, "the only response headers compared on replay (default: every header the first response carried, except --replay-ignore)")
	fs.StringSliceVar(&f.ignore, "replay-ignore", nil, "response headers never compared on replay (default: Date, hop-by-hop, Content-Length, Idempotent-Replayed, *-Request-Id, … see docs/history-format.md)")
	fs.DurationVar(&f.decisionBound, "decision-bound", 0, "how long after faults heal a retried key may stay undecided (default 5s)")
	fs.DurationVar(&f.retentionGap, "retention-gap", 0, "a gap between attempts of one key past which a duplicate is blamed on record retention (default 30s)")
}

func (f *contractFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// apply returns base with every given flag applied.
func (f *contractFlags) apply(base checkers.Contract) (checkers.Contract, error) {
	c := base
	codes := f.changed("missing-key") || f.changed("reuse") || f.changed("in-flight")
	switch {
	case f.profile == "custom" || (codes && f.profile == ""):
		if !f.changed("reuse") || !f.changed("in-flight") {
			if f.profile == "custom" || c.Profile.Name != "custom" {
				return c, fmt.Errorf("a custom contract needs --reuse and --in-flight (and --missing-key, or 0 when requests without a key execute)")
			}
		}
		p := c.Profile
		if f.profile == "custom" || c.Profile.Name != "custom" {
			p = checkers.Profile{Name: "custom"}
		}
		if f.changed("missing-key") {
			p.MissingKey = f.missingKey
		}
		if f.changed("reuse") {
			p.Reuse = f.reuse
		}
		if f.changed("in-flight") {
			p.InFlight = f.inFlight
		}
		c.Profile = p
	case f.profile != "":
		if codes {
			return c, fmt.Errorf("--missing-key, --reuse and --in-flight set a custom contract; --profile %s fixes them (use --profile custom)", f.profile)
		}
		p, err := checkers.ProfileByName(f.profile)
		if err != nil {
			return c, err
		}
		c.Profile = p
	}
	if f.changed("fingerprint") {
		c.Fingerprint = f.fingerprint
	}
	if f.changed("headers") {
		c.ReplayHeaders = trimAll(f.headers)
		if err := headerNames("--headers", c.ReplayHeaders); err != nil {
			return c, err
		}
	}
	if f.changed("replay-ignore") {
		c.ReplayIgnore = trimAll(f.ignore)
		if err := headerNames("--replay-ignore", c.ReplayIgnore); err != nil {
			return c, err
		}
	}
	if f.changed("decision-bound") {
		c.DecisionBound = f.decisionBound
	}
	if f.changed("retention-gap") {
		c.RetentionGap = f.retentionGap
	}
	return c, c.Validate()
}

// headerNames refuses a list that names no header a response can carry
// (a space, a colon, "Location: x"): compared on replay, such a name
// matches nothing, and every replay would pass on it unseen.
func headerNames(flag string, names []string) error {
	for _, n := range names {
		if !httptoken.Valid(n) {
			return fmt.Errorf("%s %q: not a header name (letters, digits and !#$%%&'*+-.^_`|~ only; separate names with commas)", flag, n)
		}
	}
	return nil
}

func trimAll(list []string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// override applies the given contract flags to every scenario of a run:
// each is then judged (and its history's meta written) by the scenario's
// contract with the flags on top, as `check` with the same flags would
// judge it. No flag given: the scenarios' own contracts stand.
func (f *contractFlags) override(ss []*scenarios.Scenario) error {
	given := false
	for _, n := range []string{"profile", "missing-key", "reuse", "in-flight", "fingerprint", "headers", "replay-ignore", "decision-bound", "retention-gap"} {
		given = given || f.changed(n)
	}
	if !given && f.profile == "" {
		return nil
	}
	for _, s := range ss {
		base, err := s.CheckerContract()
		if err != nil {
			return err
		}
		c, err := f.apply(base)
		if err != nil {
			return err
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		s.ContractOverride = &c
		if f.changed("fingerprint") {
			s.Contract.Fingerprint = c.Fingerprint // the plan's payload probe follows it too
		}
	}
	return nil
}
