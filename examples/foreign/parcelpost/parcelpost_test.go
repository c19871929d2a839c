package parcelpost_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/harness/broker/rabbitmq"
	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// python is Debian's interpreter, whose pika and psycopg2 test.sh installs.
const python = "/usr/bin/python3"

// schema is the worker's own (parcelpost.py creates it too): the oracle
// reads parcels before the worker's first start, as after a migration.
const schema = `
CREATE TABLE IF NOT EXISTS parcels (id bigserial PRIMARY KEY, order_id text NOT NULL, amount integer NOT NULL, booked_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS handled_orders (order_id text PRIMARY KEY, handled_at timestamptz NOT NULL DEFAULT now());`

func migrate(t *testing.T, dsn string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if _, err := conn.Exec(t.Context(), schema); err != nil {
		t.Fatal(err)
	}
}

// effects is the team's effect query: one row per booked parcel, keyed
// by the order id (the business id).
func effects(dsn string) func(ctx context.Context) ([]history.Effect, error) {
	return func(ctx context.Context) ([]history.Effect, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT order_id, id FROM parcels ORDER BY id`)
		if err != nil {
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
			out = append(out, history.Effect{Key: key, ID: fmt.Sprintf("parcel %d", id), Kind: "parcel"})
		}
		return out, rows.Err()
	}
}

// seeds is the corpus's default (foreign_test.go's two); CORPUS_SEEDS=N
// runs seeds 1..N.
func seeds(t *testing.T) []int64 {
	n := 2
	if v := os.Getenv("CORPUS_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("CORPUS_SEEDS=%q: want a positive number", v)
		}
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// node starts one RabbitMQ node for the test (a node starts in seconds);
// each run empties its queue first.
func node(t *testing.T) *rabbitmq.Broker {
	t.Helper()
	base, err := os.MkdirTemp("", "parcelpost-rabbitmq-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil { // the node runs as the rabbitmq user
		t.Fatal(err)
	}
	b, err := rabbitmq.Start(t.Context(), broker.Options{Dir: filepath.Join(base, "node")})
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

type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// deliver runs the worker (flaw) through one fault at one seed, and
// returns the invariants violated, with their causes, and the run's stats.
func deliver(t *testing.T, b *rabbitmq.Broker, flaw, fault string, seed int64) (map[string]string, broker.Stats) {
	t.Helper()
	ctx := t.Context()
	if err := b.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	migrate(t, dsn)
	cmd := []string{python, "parcelpost.py"}
	if flaw != "" {
		cmd = append(cmd, "--flaw", flaw)
	}
	var hist bytes.Buffer
	var logs syncWriter
	msgs := broker.Messages(seed, 6)
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: cmd, Instances: 1, Env: map[string]string{"DATABASE_URL": dsn}, Log: &logs},
		Messages: msgs, Fault: fault, Target: int(seed) % len(msgs),
		Effects: effects(dsn), Recorder: history.NewWriter(&hist), Scenario: "parcelpost " + flaw + " " + fault, Seed: seed,
		Drain: time.Minute,
	})
	if err != nil {
		t.Fatalf("deliver: %v\nworker log:\n%s", err, logs.String())
	}
	if !st.Drained {
		t.Fatalf("not every message was acknowledged within the drain: %+v\nworker log:\n%s", st, logs.String())
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

// The corpus's ground truth (README.md): each flaw caught by its invariant,
// with a cause that names it, under the fault that provokes it; the
// correct worker clean under every fault; at every seed (each aims the
// fault at another message), on one real RabbitMQ node.
func TestParcelpost(t *testing.T) {
	b := node(t)
	cases := []struct {
		flaw, fault, want, cause string
	}{
		{"", broker.FaultKillBeforeAck, "", ""},
		{"", broker.FaultKillAfterAck, "", ""},
		{"", broker.FaultPublishTwiceNewID, "", ""},
		{"", broker.FaultPublishTwiceSameID, "", ""},
		{"auto-ack", broker.FaultKillAfterAck, "no-lost-message", "ack before effect"},
		{"mark-after-ack", broker.FaultKillBeforeAck, "exactly-once", "did not see it"},
		{"no-dedupe", broker.FaultKillBeforeAck, "exactly-once", "did not see it"},
		{"no-dedupe", broker.FaultPublishTwiceNewID, "exactly-once", "did not see it"},
		// RabbitMQ has no dedupe window: a retry with the same
		// message_id is stored twice, unlike on JetStream.
		{"no-dedupe", broker.FaultPublishTwiceSameID, "exactly-once", "did not see it"},
	}
	for _, c := range cases {
		name := c.flaw
		if name == "" {
			name = "correct"
		}
		t.Run(name+"/"+c.fault, func(t *testing.T) {
			for _, seed := range seeds(t) {
				got, st := deliver(t, b, c.flaw, c.fault, seed)
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
					// message whose ack was dropped (x-delivery-count).
					if st.Killed == 0 || st.Redelivered == 0 {
						t.Errorf("seed %d: kill before ack: killed %d, redelivered %d; want both", seed, st.Killed, st.Redelivered)
					}
				case broker.FaultKillAfterAck:
					if st.Killed == 0 {
						t.Errorf("seed %d: kill after ack: no instance killed", seed)
					}
				case broker.FaultPublishTwiceSameID, broker.FaultPublishTwiceNewID:
					if st.Duplicates != 0 || st.Published != 7 {
						t.Errorf("seed %d: %s: stored %d, duplicates %d; want 7 and 0 (no dedupe on RabbitMQ)", seed, c.fault, st.Published, st.Duplicates)
					}
				}
			}
		})
	}
}

// The same worker through its team's scenario file and the harness's run
// loop (the node started by the run): the correct one met, the one
// without dedupe caught by exactly-once when its message comes again.
func TestScenario(t *testing.T) {
	for _, c := range []struct {
		flaw string
		want string // "" = met
	}{{"", ""}, {"no-dedupe", "exactly-once"}} {
		t.Run("flaw="+c.flaw, func(t *testing.T) {
			dsn := pgtest.Database(t)
			migrate(t, dsn)
			t.Setenv("PARCELPOST_FLAW", c.flaw)
			t.Setenv("PARCELPOST_DSN", dsn)
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
				t.Errorf("correct worker: met %v, caught %v (%s)", out.Met(), caught, out.Steps[0].Result.Failures())
			case c.want != "" && !slices.Contains(caught, c.want):
				t.Errorf("flaw %s: caught %v, want %s (history %s)", c.flaw, caught, c.want, out.HistoryPath)
			}
		})
	}
}
