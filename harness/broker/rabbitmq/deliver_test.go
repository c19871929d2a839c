package rabbitmq_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
	"github.com/idemchaos/idemchaos/history"
)

// envConsumer turns the test binary into a consumer process: it appends
// each message's key and intent to the file it names (the effect), then
// acks. No dedupe: a redelivery is a second effect.
const envConsumer = "RABBITMQ_TEST_CONSUMER_EFFECTS"

// envDecode makes the consumer read each body as the order it is (its
// amount in cents, an int32 as its ledger's column) before its effect,
// and put an order it cannot read back on the queue (basic.nack with
// requeue), as a worker that retries what failed does.
const envDecode = "RABBITMQ_TEST_CONSUMER_DECODE"

func TestMain(m *testing.M) {
	if path := os.Getenv(envConsumer); path != "" {
		if err := consume(path); err != nil {
			fmt.Fprintln(os.Stderr, "consumer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// envResilient makes the consumer what a team writes for a broker that
// restarts: it connects again when its connection dies (every 50 ms until
// the node answers), and books each key once (a message the node delivers
// again after the restart is acked without a second effect).
const envResilient = "RABBITMQ_TEST_CONSUMER_RESILIENT"

func consume(path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if os.Getenv(envResilient) == "" {
		return consumeOnce(ctx, path)
	}
	for {
		err := consumeOnce(ctx, path)
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintln(os.Stderr, "consumer: connection lost, connecting again:", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// booked says whether the effect file already holds key.
func booked(path string, key any) bool {
	b, _ := os.ReadFile(path)
	return bytes.Contains(append([]byte("\n"), b...), []byte(fmt.Sprintf("\n%s ", key)))
}

func consumeOnce(ctx context.Context, path string) error {
	conn, err := amqp.Dial(os.Getenv(rabbitmq.EnvURL))
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(1, 0, false); err != nil {
		return err
	}
	ds, err := ch.Consume(os.Getenv(rabbitmq.EnvQueue), "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-ds:
			if !ok {
				return fmt.Errorf("deliveries closed")
			}
			if os.Getenv(envDecode) != "" {
				var o struct {
					Order  string `json:"order"`
					Amount int32  `json:"amount"`
				}
				if err := json.Unmarshal(d.Body, &o); err != nil {
					if err := d.Nack(false, true); err != nil {
						return err
					}
					continue
				}
			}
			if os.Getenv(envResilient) != "" && booked(path, d.Headers[broker.HeaderKey]) {
				if err := d.Ack(false); err != nil {
					return err
				}
				continue
			}
			if _, err := fmt.Fprintf(f, "%s %s\n", d.Headers[broker.HeaderKey], d.Headers[broker.HeaderIntent]); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			if err := d.Ack(false); err != nil {
				return err
			}
		}
	}
}

// fileEffects is the oracle of the test consumer's effect file.
func fileEffects(path string) func(context.Context) ([]history.Effect, error) {
	return func(context.Context) ([]history.Effect, error) {
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []history.Effect
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			key, intent, ok := strings.Cut(sc.Text(), " ")
			if ok {
				out = append(out, history.Effect{Key: key, Intent: intent, ID: fmt.Sprintf("line %d", len(out)+1), Kind: "order"})
			}
		}
		return out, sc.Err()
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// deliver runs the test consumer on a node through one delivery fault.
func deliver(t *testing.T, fault string, target int) (broker.Stats, []broker.Ack, []history.Effect, []broker.Message) {
	t.Helper()
	st, acks, effs, msgs, _ := deliverWith(t, fault, target, 4, nil)
	return st, acks, effs, msgs
}

// deliverWith runs n messages, the consumer's environment extended by env,
// and returns the history too.
func deliverWith(t *testing.T, fault string, target, n int, env map[string]string) (broker.Stats, []broker.Ack, []history.Effect, []broker.Message, *history.History) {
	t.Helper()
	b := start(t, broker.Options{})
	effects := filepath.Join(t.TempDir(), "effects")
	msgs := broker.Messages(1, n)
	cenv := map[string]string{envConsumer: effects}
	for k, v := range env {
		cenv[k] = v
	}
	var logs syncBuffer
	var hist bytes.Buffer
	ctx := t.Context()
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: []string{os.Args[0]}, Env: cenv, Log: &logs},
		Messages: msgs, Fault: fault, Target: target,
		Effects: fileEffects(effects), Drain: time.Minute, Recorder: history.NewWriter(&hist),
	})
	if err != nil {
		t.Fatalf("deliver: %v\nconsumer log:\n%s", err, logs.String())
	}
	if !st.Drained {
		t.Fatalf("not drained: %+v\nconsumer log:\n%s", st, logs.String())
	}
	if !strings.Contains(hist.String(), `"message_id"`) || strings.Contains(hist.String(), "Nats-Msg-Id") {
		t.Errorf("the history's publishes do not record the dedupe id as the AMQP message_id:\n%s", hist.String())
	}
	acks, err := b.Acks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	effs, err := fileEffects(effects)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(&hist, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st, acks, effs, msgs, h
}

func effectsOf(effs []history.Effect, key string) int {
	n := 0
	for _, e := range effs {
		if e.Key == key {
			n++
		}
	}
	return n
}

// kill-before-ack on a real node: the hop holds the target's ack, the
// consumer is SIGKILLed after its effect, the ack never reaches the node,
// and the node delivers the message again — its x-delivery-count says so
// in the ack the restarted consumer sends.
func TestDeliver_KillBeforeAck_TheNodeRedelivers(t *testing.T) {
	const target = 1
	st, acks, effs, msgs := deliver(t, broker.FaultKillBeforeAck, target)
	t.Logf("%+v", st)
	if st.Killed != 1 || st.Redelivered == 0 {
		t.Errorf("killed %d, redelivered %d: want the consumer killed and the broker's redelivery counted", st.Killed, st.Redelivered)
	}
	var targetAcks []broker.Ack
	for _, a := range acks {
		if a.Seq == target+1 { // the harness's copy numbers start at 1
			targetAcks = append(targetAcks, a)
		}
	}
	if len(targetAcks) != 1 || targetAcks[0].Delivered != 2 {
		t.Errorf("acks of the target: %+v; want one, at the broker's second delivery (the first ack was dropped)", targetAcks)
	}
	if n := effectsOf(effs, msgs[target].Key); n != 2 {
		t.Errorf("the target has %d effects, want 2 (the consumer has no dedupe; the kill came after its effect)", n)
	}
	if len(acks) != len(msgs) {
		t.Errorf("%d acks for %d messages: %+v", len(acks), len(msgs), acks)
	}
}

// kill-after-ack on a real node: the consumer is SIGKILLed as its ack
// passes the hop, the ack goes on, and the node never delivers the message
// again. (The next message, which the node may have sent the dead
// consumer after that ack, comes again: that one is not the target.)
func TestDeliver_KillAfterAck_TheAckReachesTheNode(t *testing.T) {
	const target = 2
	st, acks, effs, msgs := deliver(t, broker.FaultKillAfterAck, target)
	t.Logf("%+v", st)
	if st.Killed != 1 {
		t.Errorf("killed %d: want the consumer killed", st.Killed)
	}
	var targetAcks []broker.Ack
	for _, a := range acks {
		if a.Seq == target+1 {
			targetAcks = append(targetAcks, a)
		}
	}
	if len(targetAcks) != 1 || targetAcks[0].Delivered != 1 {
		t.Errorf("acks of the target: %+v; want one, at its first delivery", targetAcks)
	}
	if n := effectsOf(effs, msgs[target].Key); n != 1 {
		t.Errorf("the target has %d effects, want 1", n)
	}
}

// poison-message on a real node: the consumer puts the order it cannot
// read back on the queue each time; the quorum queue counts the
// deliveries (x-delivery-count) and dead-letters the message past its
// delivery limit. The history's delivery event carries the node's count,
// and bounded-redelivery reports the unbounded redelivery.
func TestDeliver_PoisonMessage_TheNodeCountsAndDeadLetters(t *testing.T) {
	b := start(t, broker.Options{})
	effects := filepath.Join(t.TempDir(), "effects")
	var logs syncBuffer
	var hist bytes.Buffer
	st, err := broker.Deliver(t.Context(), broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: []string{os.Args[0]}, Env: map[string]string{envConsumer: effects, envDecode: "1"}, Log: &logs},
		Messages: broker.Messages(1, 4), Fault: broker.FaultPoisonMessage, Target: 1,
		Effects: fileEffects(effects), Drain: time.Minute, Recorder: history.NewWriter(&hist),
	})
	if err != nil {
		t.Fatalf("deliver: %v\nconsumer log:\n%s", err, logs.String())
	}
	h, err := history.Load(bytes.NewReader(hist.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var poison history.Delivery
	for _, d := range h.Deliveries {
		if d.Intent == "m-1-2" {
			poison = d
		}
	}
	t.Logf("the node delivered the poison message %d times (%s); stats %+v", poison.Count, poison.Kind, st)
	if !st.Drained || poison.Kind != history.DeliveryDeadLettered || poison.Count != broker.DefaultMaxDeliver {
		t.Errorf("poison message: %+v, drained %v; want dead-lettered by the node at its MaxDeliver %d\n%s", poison, st.Drained, broker.DefaultMaxDeliver, hist.String())
	}
	if st.Naks != int(poison.Count) {
		t.Errorf("%d naks recorded, want one per delivery (%d)", st.Naks, poison.Count)
	}
	c, err := checkers.ByName("bounded-redelivery")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Check(h, h.Effects); r.Verdict != checkers.Violated || !strings.Contains(r.Violations[0].Cause, "unbounded redelivery") {
		t.Errorf("bounded-redelivery: %s %v, want the unbounded redelivery", r.Verdict, r.Failures())
	}
	for _, name := range []string{"exactly-once", "no-lost-message"} {
		c, err := checkers.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Check(h, h.Effects); r.Verdict != checkers.Pass {
			t.Errorf("%s: %s %v, want a pass", name, r.Verdict, r.Failures())
		}
	}
}

// broker-restart on a real node: once the node has seen the second
// message's ack, its VM is SIGKILLed and started again on the same ports
// and directories. The quorum queue keeps every confirmed message; the
// consumers' connections die with the VM and reconnect through the hop;
// a consumer that books each key once ends with every message booked
// once, and the restart is in the history with its duration.
func TestDeliver_BrokerRestart_TheNodeComesBackWithItsQueue(t *testing.T) {
	st, acks, effs, msgs, h := deliverWith(t, broker.FaultBrokerRestart, 1, 8, map[string]string{envResilient: "1"})
	t.Logf("%+v", st)
	if st.Restarts != 1 || st.RestartTook <= 0 {
		t.Fatalf("restarts %d (took %v), want one", st.Restarts, st.RestartTook)
	}
	var fire, heal bool
	for _, f := range h.Faults {
		if f.Kind == broker.FaultBrokerRestart {
			fire, heal = fire || f.Action == "fire", heal || f.Action == "heal"
		}
	}
	if !fire || !heal {
		t.Errorf("fault events: fire %v heal %v, want both", fire, heal)
	}
	for _, m := range msgs {
		if n := effectsOf(effs, m.Key); n != 1 {
			t.Errorf("message %s booked %d times, want once", m.Intent, n)
		}
	}
	if len(acks) < len(msgs) {
		t.Errorf("%d acks for %d messages: the node lost some across its restart", len(acks), len(msgs))
	}
	for _, name := range h.Meta.Invariants {
		ch, err := checkers.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if r := ch.Check(h, h.Effects); r.Verdict != checkers.Pass {
			t.Errorf("%s: %s %v, want a pass", name, r.Verdict, r.Failures())
		}
	}
}
