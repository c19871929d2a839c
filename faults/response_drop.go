package faults

import "context"

func init() { Register("response-drop", func() Fault { return &ResponseDrop{} }) }

// ResponseDrop lets an attempt reach the service and run, and cuts the
// response on its way back: the client sees EOF (an info outcome) while the
// effect happened. The attempt travels through a private proxy whose
// downstream carries a limit_data toxic, so no other attempt is touched.
type ResponseDrop struct {
	// Bytes of the response let through before the cut (default 0).
	Bytes int `yaml:"bytes" json:"bytes" jsonschema:"minimum=0"`
	_     struct{}
}

var _ Aimed = (*ResponseDrop)(nil)

// Kind implements [Fault].
func (*ResponseDrop) Kind() string { return "response-drop" }

// Validate implements [Fault].
func (f *ResponseDrop) Validate() error {
	if f.Bytes < 0 {
		return invalid(f.Kind(), "bytes must be ≥ 0, got %d", f.Bytes)
	}
	return nil
}

// Apply implements [Fault]; a response drop only acts through Route.
func (*ResponseDrop) Apply(context.Context, World) error { return nil }

// Heal implements [Fault].
func (*ResponseDrop) Heal(context.Context, World) error { return nil }

// Route implements [Aimed].
func (f *ResponseDrop) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	return dropRoute(ctx, w, f.Kind(), a, f.Bytes)
}

// dropRoute opens a private path that cuts the response after n bytes.
func dropRoute(ctx context.Context, w World, kind string, a Attempt, n int) (Route, error) {
	addr, remove, err := w.PrivatePath(ctx, ServiceLink, Toxic{
		Name: "response-drop", Type: "limit_data", Stream: "downstream", Attributes: map[string]any{"bytes": n},
	})
	if err != nil {
		return Route{}, err
	}
	w.Record(kind, "fire", a.Op, map[string]any{"bytes": n, "path": addr})
	return Route{BaseURL: "http://" + addr, Fresh: true, Done: func() { _ = remove(context.Background()) }}, nil
}

// ClientAnswer implements [ClientPath]: the attempt is forwarded and
// executes, and the client's connection is reset instead of answered.
func (*ResponseDrop) ClientAnswer() Answer { return Answer{Forward: true, Cut: CutReset} }
