package nats_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemchaos/idemchaos/harness/broker"
	bnats "github.com/idemchaos/idemchaos/harness/broker/nats"
	"github.com/idemchaos/idemchaos/internal/addrgate"
)

func start(t testing.TB, opts broker.Options) *bnats.Broker {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	b, err := bnats.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return b
}

// consumer binds to the run's durable consumer as a user's consumer would,
// from the environment the broker gives it.
func consumer(t *testing.T, b *bnats.Broker) jetstream.Consumer {
	t.Helper()
	env := b.Env()
	nc, err := natsgo.Connect(env[bnats.EnvURL])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := js.Consumer(context.Background(), env[bnats.EnvStream], env[bnats.EnvConsumer])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func next(t *testing.T, c jetstream.Consumer) jetstream.Msg {
	t.Helper()
	m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStart_LoopbackOnly(t *testing.T) {
	b := start(t, broker.Options{})
	u, err := url.Parse(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("broker listens at %s, want loopback", b.URL())
	}
	_, err = bnats.Start(context.Background(), broker.Options{Dir: t.TempDir(), Listen: "0.0.0.0:0"})
	if !errors.Is(err, addrgate.ErrNotLoopback) {
		t.Errorf("listening on every interface without --allow-remote: err = %v, want ErrNotLoopback", err)
	}
	if _, ok := broker.Lookup(bnats.Kind); !ok {
		t.Errorf("kind %q not registered: %v", bnats.Kind, broker.Kinds())
	}
}

// A delivery not acknowledged within the ack wait is delivered again, and
// the ack the harness sees carries the broker's count of deliveries.
func TestRedelivery_BrokerCountsIt(t *testing.T) {
	b := start(t, broker.Options{AckWait: 300 * time.Millisecond})
	ctx := context.Background()
	p, err := b.Publish(ctx, broker.Message{Intent: "i-1", Key: "order-1", Body: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	c := consumer(t, b)
	first := next(t, c) // not acknowledged: the consumer "died"
	if got := first.Headers().Get(broker.HeaderIntent); got != "i-1" {
		t.Fatalf("intent header = %q, want i-1", got)
	}
	if first.Headers().Get("Nats-Msg-Id") != "" {
		t.Errorf("the intent went out as the broker's dedupe id too")
	}
	again := next(t, c)
	md, err := again.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if md.NumDelivered != 2 || md.Sequence.Stream != p.Seq {
		t.Fatalf("second delivery: seq %d delivered %d, want seq %d delivered 2", md.Sequence.Stream, md.NumDelivered, p.Seq)
	}
	if err := again.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	acks, err := b.Acks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 1 || acks[0].Seq != p.Seq || acks[0].Delivered != 2 || acks[0].Kind != "ack" {
		t.Fatalf("acks = %+v, want one ack of seq %d at delivery 2", acks, p.Seq)
	}
	if n, err := b.Pending(ctx); err != nil || n != 0 {
		t.Errorf("pending after the ack = %d, %v; want 0", n, err)
	}
}

// A retrying producer's second publish: with the same Nats-Msg-Id
// JetStream's dedupe window drops it; with a new one the stream holds the
// message twice, and only the consumer's own dedupe can save it.
func TestPublishTwice_DedupeWindow(t *testing.T) {
	b := start(t, broker.Options{})
	ctx := context.Background()
	pub := func(id string) broker.Published {
		t.Helper()
		p, err := b.Publish(ctx, broker.Message{Intent: "i-1", Key: "order-1", Body: []byte("x"), DedupeID: id})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, same := pub("m-1"), pub("m-1")
	if a.Duplicate || !same.Duplicate || same.Seq != a.Seq {
		t.Errorf("same dedupe id: %+v then %+v, want the second a duplicate of seq %d", a, same, a.Seq)
	}
	fresh := pub("m-1-retry")
	if fresh.Duplicate || fresh.Seq == a.Seq {
		t.Errorf("new dedupe id: %+v, want a new message", fresh)
	}
	if n, err := b.Pending(ctx); err != nil || n != 2 {
		t.Errorf("stream holds %d (%v), want 2: one intent, stored twice", n, err)
	}
	c := consumer(t, b)
	for range 2 {
		m := next(t, c)
		if got := m.Headers().Get(broker.HeaderIntent); got != "i-1" {
			t.Errorf("intent header = %q, want i-1 on both copies", got)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkStart measures the embedded server's start, JetStream, the
// run's stream and consumer and the harness's connection included, to
// its close (issue #25's target: ≤ 50 ms).
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		br, err := bnats.Start(ctx, broker.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := br.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkPublish measures the harness's synchronous publish (each
// message waits for JetStream's answer, as a run records it).
func BenchmarkPublish(b *testing.B) {
	br := start(b, broker.Options{})
	ctx := context.Background()
	body := []byte(`{"amount":100}`)
	for b.Loop() {
		if _, err := br.Publish(ctx, broker.Message{Intent: "i", Key: "k", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientPublishAsync is the yardstick of issue #25's rate target:
// the broker's own Go client publishing asynchronously to the same kind
// of stream, alone, its acks awaited at the end.
func BenchmarkClientPublishAsync(b *testing.B) {
	br := start(b, broker.Options{})
	nc, err := natsgo.Connect(br.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"amount":100}`)
	for b.Loop() {
		if _, err := js.PublishAsync(bnats.Subject, body); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		b.Fatal("async publishes not acknowledged within 30s")
	}
}
