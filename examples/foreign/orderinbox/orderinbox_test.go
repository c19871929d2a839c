package orderinbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/examples/foreign/orderinbox"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/harness/broker/nats"
	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// build compiles the consumer once per test binary.
var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "orderinbox-*")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "orderinbox")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/idemchaos/idemchaos/examples/foreign/orderinbox/cmd/orderinbox").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// effects is the team's own effect query: one row per booked order, keyed
// by the order id (the business id).
func effects(dsn string) func(ctx context.Context) ([]history.Effect, error) {
	return func(ctx context.Context) ([]history.Effect, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT order_id, id FROM orders ORDER BY id`)
		if err != nil {
			if strings.Contains(err.Error(), "does not exist") {
				return nil, nil // the consumer has not created its tables yet
			}
			return nil, err
		}
		defer rows.Close()
		var out []history.Effect
		for rows.Next() {
			var key string
			var id int64
			if err := rows.Scan(&key, &id); err != nil {
				return nil, err
			}
			out = append(out, history.Effect{Key: key, ID: fmt.Sprintf("order %d", id), Kind: "order"})
		}
		return out, rows.Err()
	}
}

// deliver runs the consumer (flaw) through one fault at one seed, and
// returns the invariants violated, with their causes, and the run's stats.
func deliver(t *testing.T, flaw, fault string, seed int64) (map[string]string, broker.Stats) {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	ctx := t.Context()
	b, err := nats.Start(ctx, broker.Options{Dir: t.TempDir(), AckWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(context.WithoutCancel(ctx)) }()
	// The consumer creates its tables; the oracle must find them before
	// the first message is judged, so create them up front as a
	// migration would.
	if conn, err := pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	} else {
		if _, err := conn.Exec(ctx, orderinbox.Schema); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(ctx)
	}
	var hist bytes.Buffer
	var logs bytes.Buffer
	cmd := []string{bin}
	if flaw != "" {
		cmd = append(cmd, "-flaw", flaw)
	}
	msgs := broker.Messages(seed, 6)
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: cmd, Instances: 1, Env: map[string]string{"DATABASE_URL": dsn}, Log: &syncWriter{w: &logs}},
		Messages: msgs, Fault: fault, Target: int(seed) % len(msgs),
		Effects: effects(dsn), Recorder: history.NewWriter(&hist), Scenario: "orderinbox " + flaw + " " + fault, Seed: seed,
		Drain: 30 * time.Second,
	})
	if err != nil {
		t.Fatalf("deliver: %v\nconsumer log:\n%s", err, logs.String())
	}
	if !st.Drained {
		t.Fatalf("not every message was acknowledged within the drain: %+v\nconsumer log:\n%s", st, logs.String())
	}
	h, err := history.Load(bytes.NewReader(hist.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"exactly-once", "no-lost-message"} {
		c, err := checkers.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		r := c.Check(h, h.Effects)
		if r.Verdict == checkers.Unknown || r.Verdict == checkers.EnvironmentError {
			t.Fatalf("%s: %v: %s", name, r.Verdict, r.Reason)
		}
		if r.Verdict == checkers.Violated {
			got[name] = r.Violations[0].String()
		}
	}
	return got, st
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// The corpus's ground truth: each flaw caught by its invariant, with a
// cause that names it, under the fault that provokes it; the correct
// consumer clean under every fault; at several seeds (each aims the
// fault at another message).
func TestOrderInbox(t *testing.T) {
	cases := []struct {
		flaw, fault, want, cause string
	}{
		{"", broker.FaultKillBeforeAck, "", ""},
		{"", broker.FaultKillAfterAck, "", ""},
		{"", broker.FaultPublishTwiceNewID, "", ""},
		{"", broker.FaultPublishTwiceSameID, "", ""},
		{"ack-first", broker.FaultKillAfterAck, "no-lost-message", "ack before effect"},
		{"mark-after-ack", broker.FaultKillBeforeAck, "exactly-once", "did not see it"},
		{"no-dedupe", broker.FaultKillBeforeAck, "exactly-once", "did not see it"},
		{"no-dedupe", broker.FaultPublishTwiceNewID, "exactly-once", "did not see it"},
		// JetStream's dedupe window covers a retry with the same id: even
		// the consumer without a dedupe of its own is clean there.
		{"no-dedupe", broker.FaultPublishTwiceSameID, "", ""},
	}
	for _, c := range cases {
		name := c.flaw
		if name == "" {
			name = "correct"
		}
		t.Run(name+"/"+c.fault, func(t *testing.T) {
			for _, seed := range []int64{1, 2, 3} {
				got, st := deliver(t, c.flaw, c.fault, seed)
				t.Logf("seed %d: %+v violated %v", seed, st, got)
				if c.want == "" {
					if len(got) > 0 {
						t.Errorf("seed %d: want clean, got %v", seed, got)
					}
				} else if cause, ok := got[c.want]; !ok || !strings.Contains(cause, c.cause) {
					t.Errorf("seed %d: want %s (cause %q), got %v", seed, c.want, c.cause, got)
				}
				switch c.fault {
				case broker.FaultKillBeforeAck:
					// The broker itself reports the redelivery of the
					// message whose ack was dropped.
					if st.Killed == 0 || st.Redelivered == 0 {
						t.Errorf("seed %d: kill before ack: killed %d, redelivered %d; want both", seed, st.Killed, st.Redelivered)
					}
				case broker.FaultPublishTwiceSameID:
					if st.Duplicates != 1 || st.Published != 6 {
						t.Errorf("seed %d: same dedupe id: stored %d, duplicates %d; want 6 and 1", seed, st.Published, st.Duplicates)
					}
				case broker.FaultPublishTwiceNewID:
					if st.Duplicates != 0 || st.Published != 7 {
						t.Errorf("seed %d: new dedupe id: stored %d, duplicates %d; want 7 and 0", seed, st.Published, st.Duplicates)
					}
				}
			}
		})
	}
}

// The same consumer through a scenario file and the harness's run loop:
// the correct one is met, the one without dedupe is caught by exactly-once
// when its message is delivered again after the kill.
func TestScenario(t *testing.T) {
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flaw string
		want string // "" = met
	}{{"", ""}, {"no-dedupe", "exactly-once"}} {
		t.Run("flaw="+c.flaw, func(t *testing.T) {
			dsn := pgtest.Database(t)
			conn, err := pgx.Connect(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(t.Context(), orderinbox.Schema); err != nil {
				t.Fatal(err)
			}
			_ = conn.Close(t.Context())
			// A wrapper puts the flaw on the command line, as a team's
			// own script would.
			wrapper := filepath.Join(t.TempDir(), "orderinbox.sh")
			script := "#!/bin/sh\nexec " + bin + " " + map[bool]string{true: "-flaw " + c.flaw, false: ""}[c.flaw != ""] + "\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("ORDERINBOX", wrapper)
			t.Setenv("ORDERS_DSN", dsn)
			s, err := scenarios.Load("scenario.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r, closeEnv, err := harness.Open(t.Context(), harness.OpenOptions{Kind: harness.EnvLocal, Scenarios: []*scenarios.Scenario{s}})
			if err != nil {
				t.Fatal(err)
			}
			defer closeEnv(context.WithoutCancel(t.Context()))
			r.HistoryDir = t.TempDir()
			out, err := r.Run(t.Context(), s, harness.RunOptions{Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.History.Acks) == 0 {
				t.Fatalf("no broker acks in the history %s", out.HistoryPath)
			}
			caught := out.Caught()
			switch {
			case c.want == "" && (!out.Met() || len(caught) > 0):
				t.Errorf("correct consumer: met %v, caught %v (%s)", out.Met(), caught, out.Steps[0].Result.Failures())
			case c.want != "" && !slices.Contains(caught, c.want):
				t.Errorf("flaw %s: caught %v, want %s (history %s)", c.flaw, caught, c.want, out.HistoryPath)
			}
		})
	}
}

// The correct consumer under poison-message through a scenario file: the
// order's amount (9,999,999,999) does not fit its integer column, so every
// delivery fails and is naked, until the broker gives up at its
// MaxDeliver — the contract's max_deliveries, 10 by default. With no
// invariants named, the fault judges bounded-redelivery beside the
// consumer's two, and it catches the message left unsettled where the
// broker gave up on it; the other orders are booked once each.
func TestScenario_PoisonMessage(t *testing.T) {
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), orderinbox.Schema); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(t.Context())
	t.Setenv("ORDERINBOX", bin)
	t.Setenv("ORDERS_DSN", dsn)
	file := filepath.Join(t.TempDir(), "poison.yaml")
	if err := os.WriteFile(file, []byte(`name: orderinbox-poison
broker:
  kind: nats
  ack_wait: 500ms
consumer:
  command: ["${ORDERINBOX}"]
  env:
    DATABASE_URL: "${ORDERS_DSN}"
messages:
  count: 6
  fault: poison-message
  target: 2
effects:
  oracle: sql
  dsn: ${ORDERS_DSN}
  query: SELECT '' AS tenant, order_id, 'order ' || id FROM orders
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	r, closeEnv, err := harness.Open(t.Context(), harness.OpenOptions{Kind: harness.EnvLocal, Scenarios: []*scenarios.Scenario{s}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEnv(context.WithoutCancel(t.Context()))
	r.HistoryDir = t.TempDir()
	out, err := r.Run(t.Context(), s, harness.RunOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	h := out.History
	if !slices.Contains(h.Meta.Invariants, "bounded-redelivery") {
		t.Fatalf("judged by %v, want bounded-redelivery among them", h.Meta.Invariants)
	}
	var poison history.Delivery
	for _, d := range h.Deliveries {
		if d.Intent == "m-7-3" {
			poison = d
		}
	}
	t.Logf("the broker delivered the poison message %d times (%s)", poison.Count, poison.Kind)
	if poison.Count != checkers.DefaultMaxDeliveries || poison.Kind != history.DeliveryExhausted {
		t.Errorf("poison message's delivery event %+v, want %d deliveries and exhausted (history %s)", poison, checkers.DefaultMaxDeliveries, out.HistoryPath)
	}
	caught := out.Caught()
	if !slices.Equal(caught, []string{"bounded-redelivery"}) {
		t.Errorf("caught %v, want bounded-redelivery alone (history %s): %v", caught, out.HistoryPath, out.Steps[0].Result.Failures())
	} else if f := out.Steps[0].Result.Failures(); !strings.Contains(strings.Join(f, "\n"), "never terminated or dead-lettered") {
		t.Errorf("bounded-redelivery: %v, want the poison message left unsettled once the broker gave up", f)
	}
	if len(h.Effects) != 5 {
		t.Errorf("%d orders booked, want the 5 good ones", len(h.Effects))
	}
}
