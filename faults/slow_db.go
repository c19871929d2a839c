package faults

import "context"

func init() { Register("slow-db", func() Fault { return &SlowDB{} }) }

// SlowDB delays the service → Postgres link. It is the race amplifier: a
// slow database widens the window between a check and an insert, so a
// non-atomic claim lets concurrent duplicates through every time.
type SlowDB struct {
	linkLatency `yaml:",inline"`
}

var _ Fault = (*SlowDB)(nil)

// Kind implements [Fault].
func (*SlowDB) Kind() string { return "slow-db" }

// Validate implements [Fault].
func (f *SlowDB) Validate() error { return f.validate(f.Kind()) }

// Apply implements [Fault].
func (f *SlowDB) Apply(ctx context.Context, w World) error {
	return f.apply(ctx, w, f.Kind(), DatabaseLink)
}

// Heal implements [Fault].
func (f *SlowDB) Heal(ctx context.Context, w World) error {
	return f.heal(ctx, w, f.Kind(), DatabaseLink)
}
