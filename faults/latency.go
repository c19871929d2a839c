package faults

import (
	"context"
	"time"
)

func init() { Register("latency", func() Fault { return &Latency{} }) }

// Latency delays traffic on the client → service link: for every connection
// while applied, or for one aimed attempt on a private path. A slow attempt
// whose client gives up is the classic "timeout, but it executed".
type Latency struct {
	linkLatency `yaml:",inline"`
}

var (
	_ Aimed    = (*Latency)(nil)
	_ Timeable = (*Latency)(nil)
)

// CanBeTimed implements [Timeable]: on the whole link for a time, or on the
// picked intents' attempts.
func (*Latency) CanBeTimed() bool { return true }

// Kind implements [Fault].
func (*Latency) Kind() string { return "latency" }

// Validate implements [Fault].
func (f *Latency) Validate() error { return f.validate(f.Kind()) }

// Apply implements [Fault].
func (f *Latency) Apply(ctx context.Context, w World) error {
	return f.apply(ctx, w, f.Kind(), ServiceLink)
}

// Heal implements [Fault].
func (f *Latency) Heal(ctx context.Context, w World) error {
	return f.heal(ctx, w, f.Kind(), ServiceLink)
}

// Route implements [Aimed].
func (f *Latency) Route(ctx context.Context, w World, a Attempt) (Route, error) {
	t := f.toxic(w)
	addr, remove, err := w.PrivatePath(ctx, ServiceLink, t)
	if err != nil {
		return Route{}, err
	}
	w.Record(f.Kind(), "fire", a.Op, t.Attributes)
	return Route{BaseURL: "http://" + addr, Fresh: true, Done: func() { _ = remove(context.Background()) }}, nil
}

// linkLatency is the latency toxic shared by latency and slow-db.
type linkLatency struct {
	// Latency is added to every packet of the stream (default 100ms).
	Latency time.Duration `yaml:"latency" json:"latency"`
	// Jitter widens Latency by a draw in [0, Jitter] from the run's seeded
	// source, made once per application (default 0; Toxiproxy's own jitter
	// uses its own random source, which the harness never relies on).
	Jitter time.Duration `yaml:"jitter" json:"jitter"`
	// Stream is "upstream" (requests) or "downstream" (responses, default).
	Stream string `yaml:"stream" json:"stream" jsonschema:"enum=upstream,enum=downstream"`
	_      struct{}
}

func (l *linkLatency) validate(kind string) error {
	if l.Latency <= 0 {
		l.Latency = 100 * time.Millisecond
	}
	if l.Jitter < 0 {
		return invalid(kind, "jitter must be ≥ 0, got %s", l.Jitter)
	}
	switch l.Stream {
	case "":
		l.Stream = "downstream"
	case "upstream", "downstream":
	default:
		return invalid(kind, "stream must be upstream or downstream, got %q", l.Stream)
	}
	return nil
}

func (l *linkLatency) toxic(w World) Toxic {
	d := l.Latency
	if l.Jitter > 0 {
		d += time.Duration(w.Rand().Int64N(int64(l.Jitter) + 1))
	}
	return Toxic{Name: "latency", Type: "latency", Stream: l.Stream, Attributes: map[string]any{"latency": d.Milliseconds(), "jitter": 0}}
}

func (l *linkLatency) apply(ctx context.Context, w World, kind string, link Link) error {
	t := l.toxic(w)
	if err := w.AddToxic(ctx, link, t); err != nil {
		return err
	}
	w.Record(kind, "fire", 0, t.Attributes)
	return nil
}

func (l *linkLatency) heal(ctx context.Context, w World, kind string, link Link) error {
	if err := w.RemoveToxic(ctx, link, "latency"); err != nil {
		return err
	}
	w.Record(kind, "heal", 0, nil)
	return nil
}

// ClientAnswer implements [ClientPath]: a slow but successful answer —
// the upstream's own, held back by Latency.
func (f *Latency) ClientAnswer() Answer { return Answer{Forward: true, Delay: f.Latency} }
