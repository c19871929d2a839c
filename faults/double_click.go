package faults

import (
	"context"
	"time"
)

func init() { Register("double-click", func() Fault { return &DoubleClick{} }) }

// DoubleClick sends several copies of an intent's first attempt with the
// same key, released within a spread: a user clicking "pay" twice.
type DoubleClick struct {
	// Copies is how many requests one click sends (default 2, at least 2).
	Copies int `yaml:"copies" json:"copies" jsonschema:"minimum=2,maximum=100"`
	// Spread releases the copies within this window (default 20ms).
	Spread time.Duration `yaml:"spread" json:"spread"`
	// Together sends the copies so that all are inside the service at
	// once, whatever the machine's load: each is written on an open
	// connection up to its last byte, then the last bytes go back to back
	// (Spread is not used). Released by timers, copies 2ms apart can
	// arrive 20ms apart on a busy machine, after the original finished.
	Together bool `yaml:"together" json:"together"`
	_        struct{}
}

var (
	_ Clicker = (*DoubleClick)(nil)
	_ Aimed   = (*DoubleClick)(nil)
)

// Kind implements [Fault].
func (*DoubleClick) Kind() string { return "double-click" }

// Validate implements [Fault].
func (f *DoubleClick) Validate() error {
	if f.Copies == 0 {
		f.Copies = 2
	}
	if f.Copies < 2 {
		return invalid(f.Kind(), "copies must be ≥ 2, got %d", f.Copies)
	}
	if f.Copies > 100 {
		return invalid(f.Kind(), "copies must be ≤ 100, got %d", f.Copies)
	}
	if f.Spread < 0 {
		return invalid(f.Kind(), "spread must be ≥ 0, got %s", f.Spread)
	}
	if f.Spread == 0 {
		f.Spread = 20 * time.Millisecond
	}
	return nil
}

// Clicks implements [Clicker].
func (f *DoubleClick) Clicks() (int, time.Duration) { return f.Copies, f.Spread }

// ClicksTogether says the copies are released together (see Together).
func (f *DoubleClick) ClicksTogether() bool { return f.Together }

// Apply implements [Fault]; the copies come from the plan.
func (*DoubleClick) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*DoubleClick) Heal(context.Context, World) error { return nil }

// Route implements [Aimed]: it records each extra copy as a firing and sends
// it on the ordinary path.
func (f *DoubleClick) Route(_ context.Context, w World, a Attempt) (Route, error) {
	if a.Click > 0 {
		w.Record(f.Kind(), "fire", a.Op, map[string]any{"copy": a.Click + 1, "of": f.Copies})
	}
	return Route{}, nil
}
