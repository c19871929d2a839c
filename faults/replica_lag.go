package faults

import (
	"context"
	"time"
)

func init() { Register("replica-lag", func() Fault { return &ReplicaLag{} }) }

// ReplicaLag delays WAL apply on a real hot standby
// (recovery_min_apply_delay), so reads there miss recent writes. A service
// that makes idempotency decisions on a replica then misses its own records.
type ReplicaLag struct {
	// Delay is the apply delay while applied (default 2s).
	Delay time.Duration `yaml:"delay" json:"delay"`
	_     struct{}
}

var (
	_ HookUser    = (*ReplicaLag)(nil)
	_ StandbyUser = (*ReplicaLag)(nil)
)

// Hooks implements [HookUser]: a user's service sets its replica's delay.
func (*ReplicaLag) Hooks() []string { return []string{"replica_delay"} }

// NeedsStandby implements [StandbyUser]: the reference's replica is a real
// streaming standby.
func (*ReplicaLag) NeedsStandby() bool { return true }

// Kind implements [Fault].
func (*ReplicaLag) Kind() string { return "replica-lag" }

// Validate implements [Fault].
func (f *ReplicaLag) Validate() error {
	if f.Delay < 0 {
		return invalid(f.Kind(), "delay must be ≥ 0, got %s", f.Delay)
	}
	if f.Delay == 0 {
		f.Delay = 2 * time.Second
	}
	return nil
}

// Apply implements [Fault].
func (f *ReplicaLag) Apply(ctx context.Context, w World) error {
	if err := w.SetReplicaDelay(ctx, f.Delay); err != nil {
		return err
	}
	w.Record(f.Kind(), "fire", 0, map[string]any{"delay_ms": f.Delay.Milliseconds()})
	return nil
}

// Heal implements [Fault].
func (f *ReplicaLag) Heal(ctx context.Context, w World) error {
	if err := w.SetReplicaDelay(ctx, 0); err != nil {
		return err
	}
	w.Record(f.Kind(), "heal", 0, nil)
	return nil
}
