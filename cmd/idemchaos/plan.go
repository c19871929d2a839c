package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

func (m *Main) planCmd() *cobra.Command {
	var (
		files []string
		seed  int64
	)
	cmd := &cobra.Command{
		Use:   "plan -s FILE",
		Short: "Print what a run would do — resolved traffic, faults, invariants, the plan — and send nothing",
		Long: `plan loads and validates the scenario, fills in every default, and prints the
resolved configuration and the plan a run with this seed would execute: every intent
(tenant, key, start time, body, double clicks, faults aimed at its attempts) and
every timed fault. Nothing is started and no request is sent, like terraform plan.`,
		Example: `  idemchaos plan -s scenarios/crash-mid-request.yaml
  idemchaos plan -s scenarios/key-reuse.yaml --seed 42`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := loadScenarios(files)
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			for _, s := range ss {
				plans, err := harness.Plans(s, seed)
				if err != nil {
					return usageError(err)
				}
				writeResolved(out, s)
				writeKeys(out, s, seed)
				prefix := s.KeyPrefix(strings.Repeat("x", scenarios.NonceLength))
				for i, p := range plans {
					// Whole keys, as sent: a user's service's carry the
					// scenario's name and the run's nonce first.
					p.Intents = slices.Clone(p.Intents)
					for k := range p.Intents {
						p.Intents[k].Key = prefix + p.Intents[k].Key
					}
					steps := s.EffectiveSteps()
					fmt.Fprintf(out, "\nstep %d/%d %q (expect %s) — plan %s", i+1, len(plans), steps[i].Name, expectWord(steps[i].Expect), p.Describe())
				}
				fmt.Fprintln(out)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "scenario", "s", nil, "scenario file (repeatable)")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the plan")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// writeKeys says the keys' format and the longest one, against the
// service's limit when the contract names one.
func writeKeys(w io.Writer, s *scenarios.Scenario, seed int64) {
	format := "[s<step>]k<seed>-<n>"
	if s.Target.Reference == nil {
		format = s.Name + "-<nonce: 8 hex of the run, x's below>-" + format
	}
	fmt.Fprintf(w, "keys       %s; longest %d characters (%s)", format, s.KeyLength(seed), s.LongestKey(seed))
	if m := s.Contract.MaxKeyLength; m > 0 {
		fmt.Fprintf(w, ", max_key_length %d", m)
	}
	fmt.Fprintln(w)
}

func expectWord(e string) string {
	if e == "" || e == "clean" {
		return "clean"
	}
	return e + " violated"
}

func writeResolved(w interface{ Write([]byte) (int, error) }, s *scenarios.Scenario) {
	fmt.Fprintf(w, "scenario %s (%s)\n", s.Name, s.File)
	if s.Description != "" {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(s.Description))
	}
	switch {
	case s.Target.Reference != nil:
		r := s.Target.Reference
		mut := r.Mutant
		if mut == "" {
			mut = "none (the correct service)"
		}
		fmt.Fprintf(w, "target     reference; mutant %s; lease %s, retention %s, retry window %s, consumer %v, replica %v\n",
			mut, r.Lease, r.Retention, r.RetryWindow, r.Consumer, r.Replica)
	default:
		fmt.Fprintf(w, "target     %s (allow remote: %v)\n", s.Target.URL, s.Target.AllowRemote)
	}
	e := s.Endpoint
	fmt.Fprintf(w, "endpoint   %s %s, key header %s, tenant in %s%s, body %s\n", e.Method, e.Path, e.KeyHeader, e.Tenant.In, strings.TrimSuffix(" "+e.Tenant.Name, " "), e.Body)
	c := s.Contract
	fmt.Fprintf(w, "contract   %s (missing key %d, reuse %d, in flight %d), fingerprint %s\n", c.Profile, c.MissingKey, c.Reuse, c.InFlight, cmp.Or(c.Fingerprint, "not probed"))
	t := s.Traffic
	fmt.Fprintf(w, "traffic    %d intents, %d tenants, concurrency %d, spread %s; duplicates %.2f, collisions %.2f, reuse %.2f, shared keys %.2f\n",
		t.Intents, t.Tenants, t.Concurrency, t.Spread, t.Duplicates, t.Collisions, t.Reuse, t.SharedKeys)
	fmt.Fprintf(w, "client     %s; retry: ≤ %d attempts within %s, backoff %s…%s full jitter, Retry-After ≤ %s; timeout %s; deadline %s; ≤ %d requests\n",
		t.Client, t.Retry.MaxAttempts, t.Retry.Budget, t.Retry.Base, t.Retry.Max, t.Retry.MaxRetryAfter, t.Timeout, t.Deadline, t.MaxRequests)
	for i, f := range s.Faults {
		fmt.Fprintf(w, "fault %d    %s%s when %s\n", i+1, f.Kind, describeParams(f.Params), describeWhen(f.When))
	}
	fmt.Fprintf(w, "effects    oracle %s\n", s.Effects.Oracle)
	var inv []string
	for _, i := range s.Invariants {
		x := i.Name
		if i.Bound > 0 {
			x += fmt.Sprintf(" (bound %s)", i.Bound)
		}
		if len(i.Headers) > 0 {
			x += fmt.Sprintf(" (headers %s)", strings.Join(i.Headers, ", "))
		}
		inv = append(inv, x)
	}
	fmt.Fprintf(w, "invariants %s\n", strings.Join(inv, ", "))
}

func describeWhen(w scenarios.When) string {
	var parts []string
	if w.Fraction > 0 {
		parts = append(parts, fmt.Sprintf("on %.0f%% of intents", w.Fraction*100))
	}
	if w.Nth > 0 {
		parts = append(parts, fmt.Sprintf("on every %dth intent", w.Nth))
	}
	if w.Attempt > 1 || len(parts) > 0 {
		parts = append(parts, fmt.Sprintf("at attempt %d", max(w.Attempt, 1)))
	}
	if w.At > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("at %s", w.At))
	}
	if w.For > 0 {
		parts = append(parts, fmt.Sprintf("for %s", w.For))
	}
	return strings.Join(parts, " ")
}

// describeParams writes fault parameters as "(copies 3, spread 5ms)".
func describeParams(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", k, p[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
