package checkers_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// clientHistory returns a clean client run's history of about n events:
// each intent an invocation, one to three attempts (a 503 or a lost answer
// from the fault proxy first for some, retried under the same key after a
// growing, jittered wait), a belief and its order.
func clientHistory(n int) []byte {
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	rng := rand.New(rand.NewPCG(1, 2))
	_ = w.Write(&history.Event{Type: history.TypeMeta, V: history.Version, Scenario: "bench", Mode: history.ModeClient, EffectsRecorded: true,
		ClientContract: checkers.DefaultClientContract().Meta()})
	body := []byte(`{"sku":"A-100","qty":1,"amount":100}`)
	var effects []history.Event
	op, events := int64(0), 1
	for i := 0; events < n; i++ {
		id, key := fmt.Sprintf("i-%d", i), fmt.Sprintf("k-%016x", rng.Uint64())
		t := int64(i) * int64(time.Millisecond)
		_ = w.Write(&history.Event{Type: history.TypeInvocation, Intent: id, Tenant: "t1", NS: t, Action: "start", Body: body})
		attempts := 1 + rng.IntN(3)
		wait := 25 + rng.Int64N(50)
		for a := 1; a <= attempts; a++ {
			op++
			_ = w.Write(&history.Event{Type: history.TypeInvoke, Op: op, Intent: id, Tenant: "t1", Key: key, Listener: "127.0.0.1:40000", Attempt: a, NS: t,
				Req: &history.Request{Method: "POST", Path: "/v1/orders", Headers: history.Headers{{Name: "Idempotency-Key", Value: key}}, Body: body}})
			t += int64(2 * time.Millisecond)
			switch {
			case a == attempts:
				_ = w.Write(&history.Event{Type: history.TypeOK, Op: op, NS: t, Resp: &history.Response{Status: 201, Body: []byte(`{"id":"ord_` + id + `"}`)}})
			case a == 1 && i%2 == 0:
				_ = w.Write(&history.Event{Type: history.TypeInfo, Op: op, NS: t, By: "proxy", Forwarded: true, Error: "reset after execution"})
			default:
				_ = w.Write(&history.Event{Type: history.TypeOK, Op: op, NS: t, By: "proxy", Resp: &history.Response{Status: 503, Body: []byte(`{"error":"unavailable"}`)}})
			}
			t += wait * int64(time.Millisecond)
			wait = wait*2 + rng.Int64N(20)
			events += 2
		}
		_ = w.Write(&history.Event{Type: history.TypeBelief, Intent: id, NS: t, Belief: history.BeliefSuccess, Resource: "ord_" + id})
		effects = append(effects, history.Event{Type: history.TypeEffect, Intent: id, Tenant: "t1", Key: key, Effect: "order ord_" + id})
		events += 3
	}
	for i := range effects {
		_ = w.Write(&effects[i])
	}
	_ = w.Flush()
	return buf.Bytes()
}

// BenchmarkLoadCheckClient measures `idemchaos check` of a client run's
// history: history.Load and the ten client invariants.
func BenchmarkLoadCheckClient(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			data := clientHistory(n)
			c, err := checkers.ForContract(checkers.DefaultContract(), checkers.SuiteNames(checkers.SuiteClient)...)
			if err != nil {
				b.Fatal(err)
			}
			var events int
			b.SetBytes(int64(len(data)))
			var cpu time.Duration
			for b.Loop() {
				cpu0 := cpuTime()
				h, err := history.Load(bytes.NewReader(data), history.LoadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				r := c.Check(h, h.Effects)
				if r.Verdict != checkers.Pass {
					b.Fatalf("a clean generated client history must pass: %s %v", r.Verdict, r.Failures())
				}
				cpu += cpuTime() - cpu0
				events = h.Events
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(events), "cpu-ns/event")
		})
	}
}

// The generated client history is clean, and checking it stays linear:
// ten times the events take well under twenty times the work (allocations
// counted, not time, so a loaded machine cannot make it flaky).
func TestClientSuite_LinearInEvents(t *testing.T) {
	c, err := checkers.ForContract(checkers.DefaultContract(), checkers.SuiteNames(checkers.SuiteClient)...)
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(n int) float64 {
		h, err := history.Load(bytes.NewReader(clientHistory(n)), history.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Check(h, h.Effects); r.Verdict != checkers.Pass {
			t.Fatalf("%d events: %s %v", n, r.Verdict, r.Failures())
		}
		return testing.AllocsPerRun(1, func() { c.Check(h, h.Effects) })
	}
	small, large := allocs(2_000), allocs(20_000)
	if large > 20*small {
		t.Fatalf("allocations grow faster than the history: %.0f for 2k events, %.0f for 20k", small, large)
	}
}
