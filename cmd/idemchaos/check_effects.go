package main

import (
	"context"
	"fmt"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// addEffects reads the effects the scenario's oracle sees now and appends
// them to h as effect events after its last event, so that a recording
// (idemchaos record) is judged like a run: "no effect" then means none.
// The file is left as it is; the effects live in the loaded history only.
// The oracle's address goes through the gate as in a run: loopback unless
// allowRemote (--allow-remote).
func addEffects(ctx context.Context, h *history.History, scenarioFile string, allowRemote bool) error {
	s, err := scenarios.Load(scenarioFile)
	if err != nil {
		return err
	}
	o, err := harness.ScenarioOracle(ctx, s, allowRemote)
	if err != nil {
		return oneLineError{err}
	}
	if o == nil {
		return fmt.Errorf("--effects %s: effects.oracle is %q; a recording's effects are read with sql or http", scenarioFile, s.Effects.Oracle)
	}
	if s.Effects.Settle > 0 {
		t := time.NewTimer(s.Effects.Settle)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fx, err := o.Effects(ctx)
	if err != nil {
		return oneLineError{fmt.Errorf("--effects %s: %w", scenarioFile, err)}
	}
	ns := h.End
	for _, e := range fx {
		ns++
		e.NS = ns
		h.Effects = append(h.Effects, e)
	}
	h.End = ns
	h.EffectsKnown = true
	return nil
}
