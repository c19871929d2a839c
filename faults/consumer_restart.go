package faults

import "context"

func init() { Register("consumer-restart", func() Fault { return &ConsumerRestart{} }) }

// ConsumerRestart kills the queue consumer after its side effect and before
// its ack (a real SIGKILL at a failpoint), then restarts it: the message is
// redelivered once its visibility timeout runs out.
type ConsumerRestart struct {
	// Point is the consumer failpoint (default "consumer-after-effect-before-ack");
	// "now" kills at once.
	Point string `yaml:"point" json:"point" jsonschema:"enum=now,enum=consumer-after-claim,enum=consumer-after-effect-before-ack"`
	armed bool
	_     struct{}
}

var (
	_ Blocking = (*ConsumerRestart)(nil)
	_ HookUser = (*ConsumerRestart)(nil)
)

// Hooks implements [HookUser].
func (*ConsumerRestart) Hooks() []string { return []string{"kill_consumer", "restart_consumer"} }

// Kind implements [Fault].
func (*ConsumerRestart) Kind() string { return "consumer-restart" }

// Validate implements [Fault].
func (f *ConsumerRestart) Validate() error {
	if f.Point == "" {
		f.Point = "consumer-after-effect-before-ack"
	}
	return validPoint(f.Kind(), f.Point, consumerPoints)
}

// Arm implements [Blocking]: it arms the failpoint.
func (f *ConsumerRestart) Arm(ctx context.Context, w World) error {
	err := arm(ctx, w, f.Kind(), "consumer", f.Point)
	f.armed = err == nil
	return err
}

// Apply implements [Fault]: it blocks until the consumer died and came back.
func (f *ConsumerRestart) Apply(ctx context.Context, w World) error {
	return killAt(ctx, w, f.Kind(), "consumer", f.Point, true, f.armed, nil)
}

// Heal implements [Fault].
func (f *ConsumerRestart) Heal(ctx context.Context, w World) error {
	return disarm(ctx, w, "consumer", f.Point)
}
