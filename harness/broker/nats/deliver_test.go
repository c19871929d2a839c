package nats_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness/broker"
	bnats "github.com/idemchaos/idemchaos/harness/broker/nats"
	"github.com/idemchaos/idemchaos/history"
)

// The test binary is also a consumer process, written as a team writes a
// JetStream worker: it books each order into its ledger (a file, one line
// per booking), skips an order it has booked already, and acks. An order
// it cannot decode is retried: by default it naks it (the broker delivers
// it again), and with envGiveUpAfter it terminates it once the broker
// has delivered it that many times ("retry a few times, then give up").
const (
	envLedger      = "NATS_TEST_CONSUMER_LEDGER"
	envGiveUpAfter = "NATS_TEST_CONSUMER_GIVE_UP_AFTER"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envLedger); path != "" {
		if err := work(path); err != nil {
			fmt.Fprintln(os.Stderr, "consumer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// order is the ledger's record of a message; amounts are cents in an
// int32, as the ledger's column is.
type order struct {
	Order  string `json:"order"`
	Amount int32  `json:"amount"`
}

func work(ledger string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	giveUp := 0
	if v := os.Getenv(envGiveUpAfter); v != "" {
		if _, err := fmt.Sscan(v, &giveUp); err != nil {
			return err
		}
	}
	nc, err := natsgo.Connect(os.Getenv(bnats.EnvURL), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	booked := map[string]bool{}
	if b, err := os.ReadFile(ledger); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, _, ok := strings.Cut(line, " "); ok {
				booked[k] = true
			}
		}
	}
	f, err := os.OpenFile(ledger, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var cons jetstream.Consumer
	for ctx.Err() == nil {
		if cons == nil {
			if cons, err = js.Consumer(ctx, os.Getenv(bnats.EnvStream), os.Getenv(bnats.EnvConsumer)); err != nil {
				cons = nil
				time.Sleep(50 * time.Millisecond) // the server is restarting
				continue
			}
		}
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for msg := range batch.Messages() {
			if err := handle(msg, f, booked, giveUp); err != nil {
				return err
			}
		}
	}
	return nil
}

func handle(msg jetstream.Msg, f *os.File, booked map[string]bool, giveUp int) error {
	var o order
	if err := json.Unmarshal(msg.Data(), &o); err != nil {
		md, merr := msg.Metadata()
		if giveUp > 0 && merr == nil && md.NumDelivered >= uint64(giveUp) {
			fmt.Fprintf(os.Stderr, "consumer: giving up on %s after %d deliveries: %v\n", msg.Headers().Get(broker.HeaderIntent), md.NumDelivered, err)
			return msg.Term()
		}
		return msg.Nak()
	}
	if !booked[o.Order] {
		if _, err := fmt.Fprintf(f, "%s %s\n", o.Order, msg.Headers().Get(broker.HeaderIntent)); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		booked[o.Order] = true
	}
	return msg.Ack()
}

// ledgerEffects is the oracle of the consumer's ledger.
func ledgerEffects(path string) func(context.Context) ([]history.Effect, error) {
	return func(context.Context) ([]history.Effect, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []history.Effect
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if key, intent, ok := strings.Cut(sc.Text(), " "); ok {
				out = append(out, history.Effect{Key: key, Intent: intent, ID: fmt.Sprintf("booking %d", len(out)+1), Kind: "booking"})
			}
		}
		return out, sc.Err()
	}
}

// deliver runs the consumer under the fault on a fresh broker and judges
// the history by the invariants its meta names.
func deliver(t *testing.T, fault string, target, n int, env map[string]string) (broker.Stats, *history.History, map[string]checkers.Result) {
	t.Helper()
	b := start(t, broker.Options{AckWait: time.Second})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(t.TempDir(), "ledger")
	env = map[string]string{envLedger: ledger, envGiveUpAfter: env[envGiveUpAfter]}
	var hist, log bytes.Buffer
	w := history.NewWriter(&hist)
	st, err := broker.Deliver(context.Background(), broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: []string{exe}, Env: env, Log: &syncWriter{w: &log}},
		Messages: broker.Messages(1, n), Fault: fault, Target: target,
		Effects: ledgerEffects(ledger), Recorder: w, Scenario: "nats-" + fault, Seed: 1,
		Drain: 60 * time.Second,
	})
	if err != nil {
		t.Fatalf("deliver: %v\nconsumer:\n%s", err, log.String())
	}
	h, err := history.Load(bytes.NewReader(hist.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatalf("load: %v\n%s", err, hist.String())
	}
	c, err := checkers.ContractFromMeta(h.Meta.Contract)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]checkers.Result{}
	for _, name := range h.Meta.Invariants {
		ch, err := checkers.ByName(name, checkers.WithContract(c))
		if err != nil {
			t.Fatal(err)
		}
		results[name] = ch.Check(h, h.Effects)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("history:\n%s\nconsumer:\n%s", hist.String(), log.String())
	}
	return st, h, results
}

// The poison message (an amount past int32) is delivered again and again
// to a consumer that naks what it cannot decode: the broker counts every
// delivery up to its MaxDeliver (20) and then gives up on it, which the
// history's delivery event says. bounded-redelivery catches it (20 is past
// the contract's 10); nothing is lost or doubled among the others.
func TestDeliver_PoisonMessage_NakedUntilTheBrokerGivesUp(t *testing.T) {
	st, h, res := deliver(t, broker.FaultPoisonMessage, 1, 5, nil)
	if st.PoisonDeliveries != broker.DefaultMaxDeliver {
		t.Errorf("the broker delivered the poison message %d times, want its MaxDeliver %d (stats %+v)", st.PoisonDeliveries, broker.DefaultMaxDeliver, st)
	}
	d := deliveryOf(t, h, "m-1-2")
	if d.Count != broker.DefaultMaxDeliver || d.Kind != history.DeliveryExhausted {
		t.Errorf("delivery event of the poison message = %+v, want %d deliveries, exhausted", d, broker.DefaultMaxDeliver)
	}
	if st.Naks < broker.DefaultMaxDeliver-1 {
		t.Errorf("%d naks recorded, want one per delivery of the poison message (%d)", st.Naks, broker.DefaultMaxDeliver)
	}
	r := res["bounded-redelivery"]
	if r.Verdict != checkers.Violated || len(r.Violations) != 1 || r.Violations[0].Intent != "m-1-2" || !strings.Contains(r.Violations[0].Cause, "unbounded redelivery") {
		t.Errorf("bounded-redelivery: %s %v, want the poison message's unbounded redelivery", r.Verdict, r.Failures())
	}
	for _, name := range []string{"exactly-once", "no-lost-message"} {
		if res[name].Verdict != checkers.Pass {
			t.Errorf("%s: %s %v, want a pass: the four good orders were booked once each", name, res[name].Verdict, res[name].Failures())
		}
	}
	if !st.Drained {
		t.Errorf("not drained: %+v", st)
	}
}

// A consumer that gives up after five deliveries terminates the poison
// message at its fifth: the broker counted five, and every invariant
// holds.
func TestDeliver_PoisonMessage_TerminatedAfterFive(t *testing.T) {
	st, h, res := deliver(t, broker.FaultPoisonMessage, 1, 5, map[string]string{envGiveUpAfter: "5"})
	if st.PoisonDeliveries != 5 {
		t.Errorf("the broker delivered the poison message %d times, want 5 (stats %+v)", st.PoisonDeliveries, st)
	}
	if d := deliveryOf(t, h, "m-1-2"); d.Count != 5 || d.Kind != "" {
		t.Errorf("delivery event of the poison message = %+v, want 5 deliveries, settled", d)
	}
	terms := 0
	for _, a := range h.Acks {
		if a.Intent == "m-1-2" && a.Term {
			terms++
			if a.Delivered != 5 {
				t.Errorf("terminated at delivery %d, want 5", a.Delivered)
			}
		}
	}
	if terms != 1 {
		t.Errorf("%d terminates of the poison message, want 1", terms)
	}
	for _, name := range h.Meta.Invariants {
		if res[name].Verdict != checkers.Pass {
			t.Errorf("%s: %s %v, want a pass", name, res[name].Verdict, res[name].Failures())
		}
	}
	if len(res) != 3 {
		t.Errorf("judged by %v, want exactly-once, no-lost-message and bounded-redelivery", h.Meta.Invariants)
	}
}

// The broker restarted mid-run (once it saw the second message's ack)
// loses nothing: every message is booked, once, by a consumer that
// deduplicates, and the restart is in the history with its duration.
func TestDeliver_BrokerRestart_LosesNothing(t *testing.T) {
	st, h, res := deliver(t, broker.FaultBrokerRestart, 1, 8, nil)
	if st.Restarts != 1 || st.RestartTook <= 0 {
		t.Fatalf("restarts %d (took %v), want one", st.Restarts, st.RestartTook)
	}
	t.Logf("restart took %v", st.RestartTook)
	var fire, heal bool
	for _, f := range h.Faults {
		if f.Kind == broker.FaultBrokerRestart {
			fire, heal = fire || f.Action == "fire", heal || f.Action == "heal"
		}
	}
	if !fire || !heal {
		t.Errorf("fault events: fire %v heal %v, want both", fire, heal)
	}
	if len(h.Effects) != 8 {
		t.Errorf("%d bookings, want the 8 messages'", len(h.Effects))
	}
	for _, name := range []string{"exactly-once", "no-lost-message"} {
		if res[name].Verdict != checkers.Pass {
			t.Errorf("%s: %s %v, want a pass", name, res[name].Verdict, res[name].Failures())
		}
	}
	if !st.Drained || st.Acks < 8 {
		t.Errorf("stats %+v: want every message acknowledged", st)
	}
}

func deliveryOf(t *testing.T, h *history.History, intent string) history.Delivery {
	t.Helper()
	for _, d := range h.Deliveries {
		if d.Intent == intent {
			return d
		}
	}
	t.Fatalf("no delivery event for %s in %+v", intent, h.Deliveries)
	return history.Delivery{}
}

// syncWriter is the consumers' log: several processes write to it.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
