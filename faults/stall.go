package faults

import "time"

func init() { Register("stall", func() Fault { return &Stall{} }) }

// Stall forwards the attempts it hits — the upstream executes — and then
// sends the client nothing until the client's own deadline gives up: the
// "timeout, but it went through" a client must not report as a failure.
// Client scenarios only.
type Stall struct {
	// Hold bounds how long the connection is held when the client never
	// gives up (default 1m): then it is closed without an answer.
	Hold time.Duration `yaml:"hold" json:"hold"`
	proxyAnswer
	_ struct{}
}

var (
	_ ClientPath = (*Stall)(nil)
	_ ClientOnly = (*Stall)(nil)
)

// Kind implements [Fault].
func (*Stall) Kind() string { return "stall" }

// Validate implements [Fault].
func (f *Stall) Validate() error {
	if f.Hold < 0 {
		return invalid(f.Kind(), "hold must be ≥ 0, got %s", f.Hold)
	}
	if f.Hold == 0 {
		f.Hold = time.Minute
	}
	return nil
}

// ClientAnswer implements [ClientPath].
func (f *Stall) ClientAnswer() Answer { return Answer{Forward: true, Cut: CutStall, Delay: f.Hold} }
