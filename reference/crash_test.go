package reference_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// These tests run the service (or consumer) as a child process and let a
// crash failpoint SIGKILL it for real.

func TestFailpoint_CrashKillsTheProcessAndARestartRecovers(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		point        string
		wantReplayed bool // the retry after restart replays (the commit landed) or executes afresh
	}{
		"after claim":                         {"after-claim", false},
		"after business write, before commit": {"after-business-write-before-commit", false},
		"after commit, before response":       {"after-commit-before-response", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := pgtest.Database(t)
			first := startChild(t, "serve", childConfig{DSN: dsn})
			s := &svc{url: "http://" + first.addr, dsn: dsn}
			failpoint(t, s.url, tc.point, "crash", 0)
			if r, err := s.tryPost(order{key: "k"}); err == nil {
				t.Fatalf("request through a crash point answered %v", r)
			}
			if !first.waitKilled(t) {
				t.Fatalf("child was not SIGKILLed: %v", first.err)
			}
			second := startChild(t, "serve", childConfig{DSN: dsn})
			s.url = "http://" + second.addr
			ageRecords(t, dsn, time.Hour) // the dead holder's lease runs out
			r := s.post(t, order{key: "k"})
			if r.status != http.StatusCreated || r.replayed() != tc.wantReplayed {
				t.Fatalf("retry after restart: %v (replayed %v), want 201 replayed=%v", r, r.replayed(), tc.wantReplayed)
			}
			if n := effects(t, dsn, reference.EffectOrder, "t1", "k"); n != 1 {
				t.Fatalf("%d orders, want 1", n)
			}
		})
	}
}

func TestMutant_CommitAfterResponseLosesAnAcknowledgedOrderOnCrash(t *testing.T) {
	t.Parallel()
	for mutant, wantOrders := range map[string]int{"": 1, "commit-after-response": 0} {
		t.Run("mutant="+mutant, func(t *testing.T) {
			t.Parallel()
			dsn := pgtest.Database(t)
			c := startChild(t, "serve", childConfig{DSN: dsn, Mutant: mutant})
			s := &svc{url: "http://" + c.addr, dsn: dsn}
			failpoint(t, s.url, "after-response-before-commit", "crash", 0)
			r := s.post(t, order{key: "k"})
			if r.status != http.StatusCreated {
				t.Fatalf("order: %v, want an acknowledged 201", r)
			}
			if !c.waitKilled(t) {
				t.Fatalf("child was not SIGKILLed: %v", c.err)
			}
			if n := effects(t, dsn, reference.EffectOrder, "t1", "k"); n != wantOrders {
				t.Fatalf("%d orders after the crash, want %d", n, wantOrders)
			}
		})
	}
}

func TestConsume_CrashBetweenEffectAndAck(t *testing.T) {
	t.Parallel()
	for mutant, wantNotifications := range map[string]int{"": 1, "consumer-no-dedupe": 2} {
		t.Run("mutant="+mutant, func(t *testing.T) {
			t.Parallel()
			s := startService(t, reference.Config{})
			c := startChild(t, "consume", childConfig{DSN: s.dsn, Mutant: mutant})
			failpoint(t, "http://"+c.addr, "consumer-after-effect-before-ack", "crash", 0)
			s.post(t, order{key: "k"}) // the armed consumer picks up its event
			if !c.waitKilled(t) {
				t.Fatalf("consumer was not SIGKILLed: %v", c.err)
			}
			execSQL(t, s.dsn, `UPDATE outbox_events SET visible_at = visible_at - interval '1 hour'`) // visibility timeout passed
			drain(t, s.dsn, mutant)
			if n := effects(t, s.dsn, reference.EffectNotification, "t1", "k"); n != wantNotifications {
				t.Fatalf("%d notifications, want %d", n, wantNotifications)
			}
		})
	}
}
