package faults

func init() { Register("refuse", func() Fault { return &Refuse{} }) }

// Refuse cuts the attempts it hits before a byte reaches the upstream: the
// connection is closed without an answer (refuse: a FIN) or reset (reset:
// an RST). The request is never forwarded, so nothing executed and a retry
// is safe, with or without a key. Client scenarios only.
type Refuse struct {
	// How is refuse (closed without an answer, default) or reset (reset);
	// either way the request is never forwarded.
	How string `yaml:"how" json:"how" jsonschema:"enum=refuse,enum=reset"`
	proxyAnswer
	_ struct{}
}

var (
	_ ClientPath = (*Refuse)(nil)
	_ ClientOnly = (*Refuse)(nil)
)

// Kind implements [Fault].
func (*Refuse) Kind() string { return "refuse" }

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

// ClientAnswer implements [ClientPath].
func (f *Refuse) ClientAnswer() Answer { return Answer{Cut: f.How} }
