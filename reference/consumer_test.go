package reference_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/reference"
)

func TestConsume_EachEventNotifiesOnce(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		s.post(t, order{key: k})
		s.post(t, order{key: k}) // a replay writes no second event
	}
	drain(t, s.dsn, "")
	drain(t, s.dsn, "") // nothing left to deliver
	for _, k := range keys {
		if n := effects(t, s.dsn, reference.EffectNotification, "t1", k); n != 1 {
			t.Errorf("key %s: %d notifications, want 1", k, n)
		}
	}
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM outbox_events WHERE acked_at IS NULL`); n != 0 {
		t.Errorf("%d unacknowledged events after draining", n)
	}
}

func TestConsume_RedeliveredEventSkippedByConsumedEvents(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	s.post(t, order{key: "k"})
	ctx, cancel := context.WithCancel(context.Background())
	c := startConsumer(t, ctx, reference.ConsumerConfig{DSN: s.dsn})
	failpoint(t, c.url, "consumer-after-effect-before-ack", "pause", 0)
	c.start()
	awaitFailpoint(t, c.url, "consumer-after-effect-before-ack", 1, 1)
	cancel()
	<-c.done
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM outbox_events WHERE acked_at IS NULL`); n != 1 {
		t.Fatalf("%d unacknowledged events, want the 1 the consumer died on", n)
	}
	execSQL(t, s.dsn, `UPDATE outbox_events SET visible_at = visible_at - interval '1 hour'`)
	drain(t, s.dsn, "")
	if n := effects(t, s.dsn, reference.EffectNotification, "t1", "k"); n != 1 {
		t.Fatalf("%d notifications, want 1", n)
	}
	if n := queryInt(t, s.dsn, `SELECT attempts FROM outbox_events`); n != 2 {
		t.Fatalf("event delivered %d times, want 2 (at-least-once)", n)
	}
}

func TestConsume_ConcurrentConsumersShareTheOutbox(t *testing.T) {
	t.Parallel()
	s := startService(t, reference.Config{})
	for i := range 20 {
		s.post(t, order{key: "k" + string(rune('a'+i))})
	}
	done := make(chan struct{}, 3)
	for range 3 {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = reference.Consume(context.Background(), reference.ConsumerConfig{DSN: s.dsn, Batch: 2, ExitWhenIdle: true}, &syncBuffer{})
		}()
	}
	for range 3 {
		<-done
	}
	drain(t, s.dsn, "") // whatever a consumer that went idle early left
	if n := queryInt(t, s.dsn, `SELECT count(*) FROM notifications`); n != 20 {
		t.Fatalf("%d notifications, want 20", n)
	}
}
