// Package broker is the seam between the run loop and the message brokers
// a consumer scenario runs on: the one [Broker] interface, the registry
// each broker kind adds itself to from its own package (as the sql
// oracle's drivers do: harness/broker/nats registers "nats" when a program
// imports it), and the message, publish and ack facts a run records.
//
// A broker is a component of whichever environment runs, never an
// environment of its own: the run starts one beside its target, points the
// user's consumer at it through [Broker.Env], publishes the plan's
// messages with [Broker.Publish] and reads what the broker itself saw
// acknowledged with [Broker.Acks].
//
// Exported API: [Broker], [DedupeNamer], [Starter], [Options], [Message], [Published],
// [Ack], [Register], [Lookup], [Kinds], the header names; the optional
// [DeliveryCounter] and [Restarter] (redeliver.go); [Deliver] and its
// faults (deliver.go).
package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemchaos/idemchaos/internal/addrgate"
)

// The headers every published message carries besides the broker's own
// dedupe id: the harness's intent (one per message, what the history
// joins attempts, acks and effects on) and the business key the
// consumer's effect is keyed by. They are not the broker's dedupe id
// (JetStream's Nats-Msg-Id) on purpose: a retrying producer may send one
// intent under two dedupe ids, and the harness must still know it is one
// message.
const (
	HeaderIntent = "Idemchaos-Intent"
	HeaderKey    = "Idemchaos-Key"
)

// Options configure a broker started for one run.
type Options struct {
	// Dir is where the broker keeps its store: a directory of the run's
	// own, which the caller removes (the broker never writes elsewhere).
	Dir string
	// Listen is where the broker listens ("" = a free port on loopback);
	// it is checked through Gate as every listener of the harness is.
	Listen string
	// Gate is the run's address gate (nil: loopback only).
	Gate *addrgate.Gate
	// AckWait is how long the broker waits for a delivery's ack before it
	// delivers the message again (0 = [DefaultAckWait]): short, so that a
	// consumer killed before its ack sees the redelivery within the run.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one message (0 =
	// [DefaultMaxDeliver]), so that a poison message cannot hold a run.
	MaxDeliver int

	_ struct{}
}

// DefaultAckWait and DefaultMaxDeliver are [Options]' defaults.
const (
	DefaultAckWait    = 2 * time.Second
	DefaultMaxDeliver = 20
)

// Message is one message of a plan as the harness publishes it.
type Message struct {
	// Intent is the harness's id of the message (header [HeaderIntent]).
	Intent string
	// Key is the business key (header [HeaderKey]).
	Key string
	// Body is the payload, rendered per message.
	Body []byte
	// DedupeID is the broker's own dedupe id (JetStream's Nats-Msg-Id);
	// "" sends none.
	DedupeID string
}

// Published is what the broker answered a publish with.
type Published struct {
	// Seq is the message's position in the broker's stream.
	Seq uint64
	// Duplicate says the broker's dedupe window recognised the dedupe id
	// and stored nothing new.
	Duplicate bool
}

// Ack is one acknowledgement the broker received from a consumer.
type Ack struct {
	// Seq is the acknowledged message's stream position.
	Seq uint64
	// Delivered is the broker's count of deliveries of that message when
	// it was acknowledged: 1 the first time, more after redeliveries.
	Delivered uint64
	// Kind is "ack", "term" (the consumer told the broker never to
	// deliver it again: as final as an ack for a lost message) or "nak"
	// (deliver it again: it settles nothing). See [AckKindAck].
	Kind string
	// At is when the harness saw it.
	At time.Time
}

// Broker is a started broker.
type Broker interface {
	// Kind is the broker's kind ("nats").
	Kind() string
	// URL is where clients connect.
	URL() string
	// Env is what a consumer process is started with: the broker's
	// address and the names of what to consume (IDEMCHAOS_NATS_URL, ...).
	Env() map[string]string
	// Publish publishes one message and waits for the broker's answer.
	Publish(ctx context.Context, m Message) (Published, error)
	// Acks lists every acknowledgement (and nak) the broker received so
	// far, in the order received.
	Acks(ctx context.Context) ([]Ack, error)
	// OnAck sets the hook every ack on the consumers' link to the broker
	// meets before the broker does (nil: none): it may block, holding that
	// consumer's link, and false drops the ack and cuts the link — what a
	// consumer killed after its effect and before its ack looks like.
	OnAck(hook func(Ack) bool)
	// Close stops the broker; its store stays in [Options.Dir] for the
	// caller to remove.
	Close(ctx context.Context) error
}

// A DedupeNamer names the field a broker's dedupe id travels in (AMQP's
// message_id), for the history's record of each publish; the record of a
// broker without the method says Nats-Msg-Id, JetStream's header.
type DedupeNamer interface{ DedupeName() string }

// Starter starts a broker of one kind.
type Starter func(ctx context.Context, opts Options) (Broker, error)

var registry struct {
	mu    sync.Mutex
	kinds map[string]Starter
}

// Register makes a broker kind available; it is called from the init of
// the kind's own package. Registering a kind twice panics.
func Register(kind string, s Starter) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.kinds == nil {
		registry.kinds = map[string]Starter{}
	}
	if _, dup := registry.kinds[kind]; dup {
		panic(fmt.Sprintf("broker: kind %q registered twice", kind))
	}
	registry.kinds[kind] = s
}

// Lookup returns the starter registered for kind.
func Lookup(kind string) (Starter, bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	s, ok := registry.kinds[kind]
	return s, ok
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]string, 0, len(registry.kinds))
	for k := range registry.kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
