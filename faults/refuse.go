package faults

import "context"

func init() { Register("refuse", func() Fault { return &Refuse{} }) }

// Refuse cuts the attempts it hits before a byte reaches the upstream: the
// connection is closed unread (refuse) or reset (reset). Nothing executed,
// so a retry is safe, with or without a key. Client scenarios only.
type Refuse struct {
	// How is refuse (closed before the request is read, default) or reset
	// (reset once the request arrived, never forwarded).
	How string `yaml:"how" json:"how" jsonschema:"enum=refuse,enum=reset"`
	_   struct{}
}

var (
	_ ClientPath = (*Refuse)(nil)
	_ ClientOnly = (*Refuse)(nil)
)

// Kind implements [Fault].
func (*Refuse) Kind() string { return "refuse" }

// ClientOnly implements [ClientOnly].
func (*Refuse) ClientOnly() {}

// Validate implements [Fault].
func (f *Refuse) Validate() error {
	switch f.How {
	case "":
		f.How = CutRefuse
	case CutRefuse, CutReset:
	default:
		return invalid(f.Kind(), "how must be refuse or reset, got %q", f.How)
	}
	return nil
}

// Apply implements [Fault]; the proxy acts from ClientAnswer.
func (*Refuse) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*Refuse) Heal(context.Context, World) error { return nil }

// ClientAnswer implements [ClientPath].
func (f *Refuse) ClientAnswer() Answer { return Answer{Cut: f.How} }
