package checkers_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// hotKey is a history of n attempts on one key, c of them running at any
// moment (a production trace with one hot key): every one a faithful replay
// or a 409, so the whole key must be swept and nothing reported.
func hotKey(tb testing.TB, n, c int) *history.History {
	tb.Helper()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	write := func(e history.Event) {
		if err := w.Write(&e); err != nil {
			tb.Fatal(err)
		}
	}
	write(history.Event{Type: history.TypeMeta, V: 1, Scenario: "hot-key"})
	body := []byte(`{"sku":"lamp"}`)
	for i := 1; i <= n; i++ {
		at := int64(i) * 1e6
		write(history.Event{Type: history.TypeInvoke, Op: int64(i), Intent: "buy", Tenant: "t1", Key: "k-hot", Attempt: i, NS: at,
			Req: &history.Request{Method: "POST", Path: "/v1/orders", Body: body}})
	}
	for i := 1; i <= n; i++ {
		// Attempt i stays open while the next c-1 start.
		end := int64(i+c)*1e6 - 1
		resp := &history.Response{Status: 201, Body: []byte(`{"id":"ord-1"}`)}
		if i%7 == 3 {
			resp = &history.Response{Status: 409, Body: []byte(`{"error":"in flight"}`)}
		}
		write(history.Event{Type: history.TypeOK, Op: int64(i), NS: end, Resp: resp})
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	h, err := history.Load(&buf, history.LoadOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// BenchmarkInFlightConflict_HotKey: one key with 40k attempts, 50 or all of
// them overlapping. Before the sweep, 40k took 8.7 s (quadratic); now the
// cost per attempt is flat (compare the ns/attempt of the sizes).
func BenchmarkInFlightConflict_HotKey(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		for _, c := range []int{50, n} {
			b.Run(fmt.Sprintf("attempts=%d/open=%d", n, c), func(b *testing.B) {
				h := hotKey(b, n, c)
				ch := checkers.InFlightConflict()
				b.ResetTimer()
				for b.Loop() {
					if r := ch.Check(h, nil); r.Verdict != checkers.Pass || r.Checked != 1 {
						b.Fatalf("got %s, checked %d: %v", r.Verdict, r.Checked, r.Failures())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/attempt")
			})
		}
	}
}

// A hot key's late violation is still found by the sweep, with the first
// attempt it overlapped as the witness.
func TestInFlightConflict_HotKeyLateViolation(t *testing.T) {
	t.Parallel()
	h := hotKey(t, 5000, 5000)
	// The last attempt executes again instead of replaying.
	last := &h.Attempts[len(h.Attempts)-1]
	last.RespHash, last.RespPreview, last.Status = history.Hash([]byte(`{"id":"ord-2"}`)), `{"id":"ord-2"}`, 201
	r := checkers.InFlightConflict().Check(h, nil)
	if r.Verdict != checkers.Violated || len(r.Violations) != 1 {
		t.Fatalf("got %s: %v", r.Verdict, r.Failures())
	}
	if ops := r.Violations[0].Ops; ops[0] != 1 || ops[1] != 5000 {
		t.Errorf("ops %v, want [1 5000]: the first overlapping success is the witness", ops)
	}
}

// A check that runs out of its budget says unknown for the keys it did not
// reach, never pass.
func TestWithDeadline_UnfinishedKeysAreUnknown(t *testing.T) {
	t.Parallel()
	h := hotKey(t, 20_000, 20_000)
	r := checkers.WithDeadline(checkers.InFlightConflict(), time.Nanosecond).Check(h, nil)
	if r.Verdict != checkers.Unknown || !strings.Contains(r.Reason, "time budget") || !strings.Contains(r.Reason, "1 of 1 keys") {
		t.Fatalf("got %s (%q), want unknown naming the budget", r.Verdict, r.Reason)
	}
	all := checkers.WithDeadline(checkers.Default(), time.Hour).Check(h, nil)
	if p := all.Results[3]; p.Name != "in-flight-conflict" || p.Verdict != checkers.Pass {
		t.Fatalf("with time to spare: %s %s (%s)", p.Name, p.Verdict, p.Reason)
	}
}
