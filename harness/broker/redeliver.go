package broker

import "context"

// The kinds of [Ack.Kind].
const (
	// AckKindAck acknowledges the message: it is done.
	AckKindAck = "ack"
	// AckKindTerm terminates it: never deliver it again (as final as an
	// ack for a lost message).
	AckKindTerm = "term"
	// AckKindNak asks the broker to deliver it again (NATS -NAK, AMQP
	// basic.nack or basic.reject with requeue): it settles nothing.
	AckKindNak = "nak"
)

// Settles says the ack ends the message's deliveries (an ack or a
// terminate, not a nak).
func (a Ack) Settles() bool { return a.Kind != AckKindNak }

// Delivery is a broker's count of one stored message's deliveries.
type Delivery struct {
	// Seq is the message's stream position ([Published.Seq]).
	Seq uint64
	// Count is how many times the broker delivered it.
	Count uint64
	// Kind is "" while the broker may deliver it again or it was settled,
	// [DeliveryExhausted] when the broker reached its max-deliver count
	// and gave up on it, [DeliveryDeadLettered] when it moved it to a
	// dead-letter queue.
	Kind string
}

// The kinds of [Delivery.Kind], as the history's delivery events write
// them.
const (
	DeliveryExhausted    = "exhausted"
	DeliveryDeadLettered = "dead-lettered"
)

// A DeliveryCounter reports the broker's own count of deliveries of every
// message it delivered at least once: what the run writes as delivery
// events at its end, for bounded-redelivery. A broker without the method
// writes none (the acks' counts are then all a history says).
type DeliveryCounter interface {
	Deliveries(ctx context.Context) ([]Delivery, error)
}

// A Restarter restarts the broker process in place — same address, same
// store — losing nothing it had acknowledged to a publisher: the
// broker-restart fault. The consumers' connections die with the old
// process and reconnect to the new one.
type Restarter interface {
	Restart(ctx context.Context) error
}
