package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/examples/foreign/dispatch"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/broker"
	"github.com/idemchaos/idemchaos/harness/broker/redis"
	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// build compiles the consumer once per test binary.
var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dispatch-*")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dispatch")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/idemchaos/idemchaos/examples/foreign/dispatch/cmd/dispatch").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// seeds is how many seeds each case runs at: 3, or CORPUS_SEEDS.
func seeds(t *testing.T) []int64 {
	n := 3
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

// effects is the team's own effect query: one row per shipment, keyed by
// the order id (the business id).
func effects(dsn string) func(ctx context.Context) ([]history.Effect, error) {
	return func(ctx context.Context) ([]history.Effect, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT order_id, id FROM shipments ORDER BY id`)
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
			out = append(out, history.Effect{Key: key, ID: fmt.Sprintf("shipment %d", id), Kind: "shipment"})
		}
		return out, rows.Err()
	}
}

// run is one delivery run's outcome: the invariants violated with their
// causes, the stats, and the messages never acknowledged.
type run struct {
	violated map[string]string
	st       broker.Stats
	unacked  []string
	target   string
	log      string
}

// deliver runs the consumer (flaw) through one fault at one seed.
func deliver(t *testing.T, flaw, fault string, seed int64, drain time.Duration) run {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	ctx := t.Context()
	b, err := redis.Start(ctx, broker.Options{Dir: t.TempDir(), AckWait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(context.WithoutCancel(ctx)) }()
	// The tables exist before the first message is judged, as a
	// migration would make them.
	if conn, err := pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	} else {
		if _, err := conn.Exec(ctx, dispatch.Schema); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(ctx)
	}
	var hist, logs bytes.Buffer
	cmd := []string{bin}
	if flaw != "" {
		cmd = append(cmd, "-flaw", flaw)
	}
	msgs := broker.Messages(seed, 6)
	target := int(seed) % len(msgs)
	st, err := broker.Deliver(ctx, broker.Config{
		Broker:   b,
		Consumer: broker.Consumer{Command: cmd, Instances: 2, Env: map[string]string{"DATABASE_URL": dsn}, Log: &syncWriter{w: &logs}},
		Messages: msgs, Fault: fault, Target: target,
		Effects: effects(dsn), Recorder: history.NewWriter(&hist), Scenario: "dispatch " + flaw + " " + fault, Seed: seed,
		Drain: drain,
	})
	if err != nil {
		t.Fatalf("deliver: %v\nconsumer log:\n%s", err, logs.String())
	}
	h, err := history.Load(bytes.NewReader(hist.Bytes()), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := run{violated: map[string]string{}, st: st, target: msgs[target].Intent, log: logs.String()}
	acked := map[string]bool{}
	for _, a := range h.Acks {
		acked[a.Intent] = true
	}
	for _, m := range msgs {
		if !acked[m.Intent] {
			out.unacked = append(out.unacked, m.Intent)
		}
	}
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
			out.violated[name] = r.Violations[0].String()
		}
	}
	return out
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

// The corpus's ground truth (README.md): each flaw caught by its
// invariant with a cause that names it, under the fault that provokes
// it; the correct consumer clean under every fault; the consumer that
// never claims left with the killed instance's entry never acknowledged;
// at several seeds (each aims the fault at another message), two
// instances competing on the group.
func TestDispatch(t *testing.T) {
	cases := []struct {
		flaw, fault, want, cause string
		// stuck: the run does not drain, and the target is among the
		// messages never acknowledged.
		stuck bool
	}{
		{flaw: "", fault: broker.FaultKillBeforeAck},
		{flaw: "", fault: broker.FaultKillAfterAck},
		{flaw: "", fault: broker.FaultPublishTwiceNewID},
		{flaw: "", fault: broker.FaultPublishTwiceSameID},
		// redis-server SIGKILLed and started again once it saw the
		// target's ack: its append-only file keeps every entry, and
		// the correct consumer reconnects and ships each once.
		{flaw: "", fault: broker.FaultBrokerRestart},
		{flaw: "ack-first", fault: broker.FaultKillAfterAck, want: "no-lost-message", cause: "ack before effect"},
		{flaw: "no-dedupe", fault: broker.FaultKillBeforeAck, want: "exactly-once", cause: "did not see it"},
		{flaw: "no-dedupe", fault: broker.FaultPublishTwiceNewID, want: "exactly-once", cause: "did not see it"},
		// Redis has no dedupe window: a retry with the same id is a
		// second entry too.
		{flaw: "no-dedupe", fault: broker.FaultPublishTwiceSameID, want: "exactly-once", cause: "did not see it"},
		{flaw: "no-claim", fault: broker.FaultKillBeforeAck, stuck: true},
		// Without a crash nothing is left pending: the flaw does not show.
		{flaw: "no-claim", fault: broker.FaultPublishTwiceSameID},
	}
	for _, c := range cases {
		name := c.flaw
		if name == "" {
			name = "correct"
		}
		t.Run(name+"/"+c.fault, func(t *testing.T) {
			for _, seed := range seeds(t) {
				drain := 30 * time.Second
				if c.stuck {
					drain = 8 * time.Second // 16 ack waits: what never came by then never will
				}
				r := deliver(t, c.flaw, c.fault, seed, drain)
				t.Logf("seed %d: %+v violated %v unacked %v", seed, r.st, r.violated, r.unacked)
				switch {
				case c.stuck:
					// The killed instance's entries — the target and
					// whatever else its last read took — stay pending.
					if r.st.Drained || !slices.Contains(r.unacked, r.target) {
						t.Errorf("seed %d: want the run undrained with %s never acknowledged, got drained %v, unacked %v", seed, r.target, r.st.Drained, r.unacked)
					}
				case !r.st.Drained:
					t.Fatalf("seed %d: not every message was acknowledged within the drain: %+v, unacked %v\nconsumer log:\n%s", seed, r.st, r.unacked, r.log)
				case c.want == "":
					if len(r.violated) > 0 {
						t.Errorf("seed %d: want clean, got %v", seed, r.violated)
					}
				default:
					if cause, ok := r.violated[c.want]; !ok || !strings.Contains(cause, c.cause) {
						t.Errorf("seed %d: want %s (cause %q), got %v", seed, c.want, c.cause, r.violated)
					}
				}
				switch c.fault {
				case broker.FaultKillBeforeAck:
					// The broker itself reports the redelivery of the
					// entry whose ack was dropped, once it was claimed.
					if r.st.Killed == 0 || (!c.stuck && r.st.Redelivered == 0) {
						t.Errorf("seed %d: kill before ack: killed %d, redelivered %d; want both", seed, r.st.Killed, r.st.Redelivered)
					}
					if c.stuck && r.st.Redelivered != 0 {
						t.Errorf("seed %d: a consumer that never claims had %d redeliveries", seed, r.st.Redelivered)
					}
				case broker.FaultKillAfterAck:
					if r.st.Killed == 0 {
						t.Errorf("seed %d: kill after ack killed no instance", seed)
					}
				case broker.FaultBrokerRestart:
					if r.st.Restarts != 1 {
						t.Errorf("seed %d: %d broker restarts, want 1", seed, r.st.Restarts)
					}
				case broker.FaultPublishTwiceSameID, broker.FaultPublishTwiceNewID:
					if r.st.Duplicates != 0 || r.st.Published != 7 {
						t.Errorf("seed %d: stored %d, duplicates %d; want 7 and 0 (Redis keeps both copies)", seed, r.st.Published, r.st.Duplicates)
					}
				}
			}
		})
	}
}

// The same consumer through a scenario file and the harness's run loop:
// the correct one is met, the one without dedupe is caught by
// exactly-once when the killed instance's entry is claimed again.
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
			if _, err := conn.Exec(t.Context(), dispatch.Schema); err != nil {
				t.Fatal(err)
			}
			_ = conn.Close(t.Context())
			// A wrapper puts the flaw on the command line, as a team's
			// own script would.
			wrapper := filepath.Join(t.TempDir(), "dispatch.sh")
			script := "#!/bin/sh\nexec " + bin + " " + map[bool]string{true: "-flaw " + c.flaw, false: ""}[c.flaw != ""] + "\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("DISPATCH", wrapper)
			t.Setenv("SHIPMENTS_DSN", dsn)
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
