package reference_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

// mutantScenario drives one deterministic interaction against a service
// started with mutant (or the correct service when mutant is "") and
// reports the characteristic misbehaviour it observed, "" when none. The
// interleavings are forced with pause failpoints and clock shifts, never
// with lucky timing.
type mutantScenario func(t *testing.T, mutant string) (misbehaviour string)

var mutantScenarios = map[string]mutantScenario{
	"no-key":                raceFreeRetry,
	"check-then-insert":     racePastTheCheck,
	"execute-then-record":   racePastTheCheck,
	"body-hash-key":         identicalBodiesTwoIntents,
	"no-fingerprint":        reuseWithOtherPayload,
	"empty-replay":          replayIdentical,
	"regenerate-on-replay":  replayIdentical,
	"global-namespace":      crossTenantKey,
	"processing-reexecutes": duplicateWhileInFlight,
	"no-lease":              retryAfterHolderDied,
	"replica-read":          retryReadsLaggingReplica,
	"short-retention":       lateRetryWithinWindow,
	"consumer-no-dedupe":    redeliveryAfterDeathBeforeAck,
	"callback-accumulates":  callbackRedelivered,
	"commit-after-response": ackBeforeCommit,
}

// TestMutant_CaughtAndCorrectServiceClean runs every mutant's scenario
// twice: the mutant must show its misbehaviour, the correct service must
// not. A mutant without a scenario fails the test.
func TestMutant_CaughtAndCorrectServiceClean(t *testing.T) {
	t.Parallel()
	for _, m := range reference.Mutants() {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			scenario, ok := mutantScenarios[m.Name]
			if !ok {
				t.Fatalf("mutant %s has no scenario", m.Name)
			}
			// The two runs are sequential: replica-read shares one standby.
			t.Run("correct", func(t *testing.T) {
				if got := scenario(t, ""); got != "" {
					t.Fatalf("correct service misbehaved: %s", got)
				}
			})
			t.Run("mutant", func(t *testing.T) {
				if got := scenario(t, m.Name); got == "" {
					t.Fatalf("mutant %s showed no misbehaviour (should violate %s)", m.Name, m.Invariant)
				} else {
					t.Logf("caught (%s): %s", m.Invariant, got)
				}
			})
		})
	}
}

func countOrders(t *testing.T, s *svc, tenant, key string) int {
	t.Helper()
	return effects(t, s.dsn, reference.EffectOrder, tenant, key)
}

// raceFreeRetry: a plain sequential retry of one intent.
func raceFreeRetry(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	s.post(t, order{key: "k"})
	s.post(t, order{key: "k"})
	if n := countOrders(t, s, "t1", "k"); n != 1 {
		return fmt.Sprintf("a retry with the same key created %d orders", n)
	}
	return ""
}

// racePastTheCheck holds two duplicates just before the claim (after the
// mutants' SELECT), then lets both go.
func racePastTheCheck(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	failpoint(t, s.url, "before-claim", "pause", 0)
	a := s.postAsync(t, order{key: "k"})
	b := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "before-claim", 2, 2)
	release(t, s.url, "before-claim")
	ra, rb := <-a, <-b
	if n := countOrders(t, s, "t1", "k"); n != 1 {
		return fmt.Sprintf("two racing duplicates (%d, %d) created %d orders", ra.status, rb.status, n)
	}
	return ""
}

// identicalBodiesTwoIntents: two intents, two keys, byte-identical bodies.
func identicalBodiesTwoIntents(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	first := s.post(t, order{key: "intent-1"})
	second := s.post(t, order{key: "intent-2"})
	if n := countOrders(t, s, "t1", "intent-2"); n != 1 || second.replayed() || bytes.Equal(first.body, second.body) {
		return fmt.Sprintf("second intent got %v (replayed %v) and has %d orders: swallowed", second, second.replayed(), n)
	}
	return ""
}

// reuseWithOtherPayload: one key, two payloads.
func reuseWithOtherPayload(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	s.post(t, order{key: "k", body: `{"sku":"A","qty":1,"amount":10}`})
	r := s.post(t, order{key: "k", body: `{"sku":"B","qty":9,"amount":99}`})
	if r.status != http.StatusUnprocessableEntity {
		return fmt.Sprintf("reuse with another payload answered %v instead of 422", r)
	}
	return ""
}

// replayIdentical: a duplicate's status and body must equal the first's.
func replayIdentical(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	first := s.post(t, order{key: "k"})
	again := s.post(t, order{key: "k"})
	if again.status != first.status || !bytes.Equal(again.body, first.body) {
		return fmt.Sprintf("replay %v differs from first response %v", again, first)
	}
	return ""
}

// crossTenantKey: tenant t2 reuses t1's key with the same payload.
func crossTenantKey(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	a := s.post(t, order{token: "tok-t1", key: "k"})
	b := s.post(t, order{token: "tok-t2", key: "k"})
	if bytes.Equal(a.body, b.body) || jsonField(t, b.body, "tenant") != "t2" {
		return fmt.Sprintf("tenant t2 received %s, produced for t1", b.body)
	}
	return ""
}

// duplicateWhileInFlight: a duplicate arrives while the first holds the claim.
func duplicateWhileInFlight(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	failpoint(t, s.url, "after-claim", "pause", 1)
	first := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	dup := s.post(t, order{key: "k"})
	release(t, s.url, "after-claim")
	<-first
	if n := countOrders(t, s, "t1", "k"); dup.status != http.StatusConflict || n != 1 {
		return fmt.Sprintf("duplicate in flight answered %v; %d orders", dup, n)
	}
	return ""
}

// retryAfterHolderDied: the holder stops after its claim and its lease
// runs out (clock shifted); a retry must get a definite answer.
func retryAfterHolderDied(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	failpoint(t, s.url, "after-claim", "pause", 1)
	holder := s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-claim", 1, 1)
	ageRecords(t, s.dsn, 24*time.Hour)
	retry := s.post(t, order{key: "k"})
	release(t, s.url, "after-claim")
	<-holder
	if retry.status == http.StatusConflict {
		return fmt.Sprintf("a day after its holder stopped, the key still answers %v", retry)
	}
	return ""
}

// retryReadsLaggingReplica: the standby applies WAL an hour late; a retry
// after a success must still replay.
func retryReadsLaggingReplica(t *testing.T, mutant string) string {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	if err := reference.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	sb := pgtest.Standby(t)
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	replica := sb.DSNFor(pc.Database)
	awaitReplay(t, dsn, replica)
	if err := sb.SetApplyDelay(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.SetApplyDelay(context.Background(), 0) })
	s := startService(t, reference.Config{DSN: dsn, ReplicaDSN: replica, Mutant: mutant})
	s.post(t, order{key: "k"})
	s.post(t, order{key: "k"})
	if n := countOrders(t, s, "t1", "k"); n != 1 {
		return fmt.Sprintf("a retry after success created %d orders (lookup on the lagging replica)", n)
	}
	return ""
}

// awaitReplay waits until the standby replayed everything the primary has
// written so far (the schema).
func awaitReplay(t *testing.T, primary, standby string) {
	t.Helper()
	var lsn string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pconn, err := pgx.Connect(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close(ctx)
	if err := pconn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	var sconn *pgx.Conn
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if sconn == nil {
			sconn, _ = pgx.Connect(ctx, standby) // the database may not be replayed yet
		}
		if sconn != nil {
			var done bool
			if err := sconn.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err == nil && done {
				sconn.Close(ctx)
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("standby did not replay %s", lsn)
		case <-tick.C:
		}
	}
}

// lateRetryWithinWindow: retention 1h = retry window 1h; a retry 30 min
// later (clock shifted) after a purge must still replay.
func lateRetryWithinWindow(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant, Retention: time.Hour, MaxRetryWindow: time.Hour})
	s.post(t, order{key: "k"})
	ageRecords(t, s.dsn, 30*time.Minute)
	if r := postJSON(t, s.url+"/debug/purge", "", ""); r.status != http.StatusOK {
		t.Fatalf("purge: %v", r)
	}
	s.post(t, order{key: "k"})
	if n := countOrders(t, s, "t1", "k"); n != 1 {
		return fmt.Sprintf("a retry 30m into a 1h retry window created %d orders (record purged)", n)
	}
	return ""
}

// redeliveryAfterDeathBeforeAck: the consumer dies between its effect and
// its ack; the event is redelivered after the visibility timeout.
func redeliveryAfterDeathBeforeAck(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	s.post(t, order{key: "k"})
	ctx, cancel := context.WithCancel(context.Background())
	c := startConsumer(t, ctx, reference.ConsumerConfig{DSN: s.dsn, Mutant: mutant, Failpoints: true})
	failpoint(t, c.url, "consumer-after-effect-before-ack", "pause", 0)
	c.start()
	awaitFailpoint(t, c.url, "consumer-after-effect-before-ack", 1, 1)
	cancel() // the consumer dies before its ack
	if err := <-c.done; err != nil {
		t.Fatalf("consume: %v", err)
	}
	execSQL(t, s.dsn, `UPDATE outbox_events SET visible_at = visible_at - interval '1 hour'`) // visibility timeout passed
	drain(t, s.dsn, mutant)
	if n := effects(t, s.dsn, reference.EffectNotification, "t1", "k"); n != 1 {
		return fmt.Sprintf("the redelivered event sent %d notifications", n)
	}
	return ""
}

// callbackRedelivered: the provider delivers the same callback twice.
func callbackRedelivered(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	id := jsonField(t, s.post(t, order{key: "k"}).body, "id")
	cb := fmt.Sprintf(`{"provider_tx":"tx-1","order_id":%q,"status":"paid","amount":500}`, id)
	for range 2 {
		if r := postSigned(t, s.url+"/v1/callbacks/payment", reference.DefaultProviderToken, signed(cb), cb); r.status != http.StatusOK {
			t.Fatalf("callback: %v", r)
		}
	}
	if n := effects(t, s.dsn, reference.EffectPaymentCredit, "t1", "k"); n != 1 {
		return fmt.Sprintf("one paid order was credited %d times", n)
	}
	return ""
}

// ackBeforeCommit: the service is held right after it answered; is the
// acknowledged order durable at that moment?
func ackBeforeCommit(t *testing.T, mutant string) string {
	s := startService(t, reference.Config{Mutant: mutant})
	failpoint(t, s.url, "after-response-before-commit", "pause", 1)
	r := <-s.postAsync(t, order{key: "k"})
	awaitFailpoint(t, s.url, "after-response-before-commit", 1, 1)
	n := countOrders(t, s, "t1", "k")
	release(t, s.url, "after-response-before-commit")
	if r.status != http.StatusCreated {
		t.Fatalf("order: %v", r)
	}
	if n != 1 {
		return fmt.Sprintf("the client held a 201 while %d orders were committed: a crash now loses it", n)
	}
	return ""
}
