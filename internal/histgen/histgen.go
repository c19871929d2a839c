package histgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/idemchaos/idemchaos/history"
)

// Config shapes a generated history.
type Config struct {
	// Events is the approximate number of events (lines) to generate.
	Events int
	// Tenants is the number of tenants (default 3).
	Tenants int
	// DupRate is the fraction of intents that get a concurrent duplicate
	// (a double click answered 409) or a sequential duplicate (a replay).
	DupRate float64
	// IndetRate is the fraction of intents whose first attempt ends info
	// (a dropped response) and is retried.
	IndetRate float64
	// Seed makes the history reproducible.
	Seed uint64
	_    struct{}
}

// Default is the mix the benchmarks use: 10% duplicates, 5% indeterminate,
// 3 tenants.
func Default(events int) Config {
	return Config{Events: events, Tenants: 3, DupRate: 0.10, IndetRate: 0.05, Seed: 1}
}

// Generate returns the history as JSONL, encoded by [history.AppendEvent].
func Generate(cfg Config) []byte {
	var b bytes.Buffer
	b.Grow(cfg.Events * 330)
	_ = Write(&b, cfg) // a bytes.Buffer does not fail
	return b.Bytes()
}

// Write streams the history [Generate] returns to w, in memory that does
// not grow with the bodies: histories of tens of millions of events.
func Write(w io.Writer, cfg Config) error {
	if cfg.Tenants <= 0 {
		cfg.Tenants = 3
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x1de4c4a05))
	bw := bufio.NewWriterSize(w, 1<<20)
	var out []byte
	var werr error
	var ev history.Event
	put := func(e *history.Event) {
		out = history.AppendEvent(out[:0], e)
		out = append(out, '\n')
		if _, err := bw.Write(out); err != nil && werr == nil {
			werr = err
		}
	}
	ev = history.Event{Type: history.TypeMeta, V: history.Version, Scenario: "bench", Seed: int64(cfg.Seed), Started: "2026-11-30T00:00:00Z", EffectsRecorded: true}
	put(&ev)

	// An effect is kept as the numbers its line is made from.
	type effect struct {
		tenant  int32
		keyRand uint32
		n       int
	}
	var effects []effect
	// Effects are read by the oracle after the run: one line each at the end.
	budget := cfg.Events - 1
	var op int64
	ns := int64(1_000_000)
	tenants := make([]string, cfg.Tenants)
	tokens := make([]string, cfg.Tenants)
	for i := range tenants {
		tenants[i] = "t" + strconv.Itoa(i+1)
		tokens[i] = "Bearer tok_" + strconv.Itoa(i+1) + "9f8e7d6c5b4a"
	}
	reqHeaders := func(t int, key string) history.Headers {
		return history.Headers{
			{Name: "Idempotency-Key", Value: key},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Authorization", Value: tokens[t]},
			{Name: "User-Agent", Value: "idemchaos/1 (client)"},
		}
	}
	for n := 0; budget > 0; n++ {
		t := rng.IntN(cfg.Tenants)
		tenant := tenants[t]
		intent := "i" + strconv.Itoa(n)
		keyRand := rng.Uint32()
		key := fmt.Sprintf("k-%08x-%04x", keyRand, n&0xffff)
		client := rng.IntN(32)
		reqBody := fmt.Appendf(nil, `{"sku":"SKU-%05d","qty":%d,"amount_cents":%d,"currency":"EUR","customer":"cus_%06d","note":"gift wrap, leave at the door"}`,
			rng.IntN(100000), 1+rng.IntN(5), 100+rng.IntN(100000), rng.IntN(1000000))
		orderID := fmt.Sprintf("ord_%09d", n)
		respBody := fmt.Appendf(nil, `{"id":"%s","status":"created","amount_cents":%d,"currency":"EUR","created_at":"2026-11-30T00:%02d:%02d.%03dZ"}`,
			orderID, 100+rng.IntN(100000), (ns/60e9)%60, (ns/1e9)%60, (ns/1e6)%1000)
		respHeaders := func(replay bool) history.Headers {
			h := history.Headers{
				{Name: "Content-Type", Value: "application/json"},
				{Name: "Location", Value: "/v1/orders/" + orderID},
				{Name: "Date", Value: "Mon, 30 Nov 2026 00:00:00 GMT"},
				{Name: "X-Request-Id", Value: "req_" + strconv.FormatInt(op, 36)},
			}
			if replay {
				h = append(h, history.Header{Name: "Idempotent-Replayed", Value: "true"})
			}
			return h
		}
		invoke := func(attempt int, at int64) int64 {
			op++
			ev = history.Event{Type: history.TypeInvoke, Op: op, Intent: intent, Tenant: tenant, Key: key, Attempt: attempt, Client: client, NS: at,
				Req: &history.Request{Method: "POST", Path: "/v1/orders", Headers: reqHeaders(t, key), Body: reqBody}}
			put(&ev)
			budget--
			return op
		}
		ok := func(o int64, at int64, status int, body []byte, replay bool) {
			ev = history.Event{Type: history.TypeOK, Op: o, NS: at, Resp: &history.Response{Status: status, Headers: respHeaders(replay), Body: body}}
			put(&ev)
			budget--
		}
		attempt := 1
		if rng.Float64() < cfg.IndetRate {
			// The response is dropped: the service executed, the client timed out.
			o := invoke(attempt, ns)
			ev = history.Event{Type: history.TypeFault, Fault: "response-drop", Op: o, NS: ns + 100_000, Detail: []byte(`{"proxy":"p` + strconv.FormatInt(o, 10) + `"}`)}
			put(&ev)
			ev = history.Event{Type: history.TypeInfo, Op: o, NS: ns + 500_000_000, Error: "timeout after 500ms"}
			put(&ev)
			budget -= 2
			ns += 500_100_000
			attempt++
			o = invoke(attempt, ns)
			ok(o, ns+2_000_000, 200, respBody, true)
			ns += 2_100_000
		} else {
			o := invoke(attempt, ns)
			switch r := rng.Float64(); {
			case r < cfg.DupRate/2:
				// A double click while the first attempt runs: 409.
				d := invoke(attempt, ns+1_000_000)
				ev = history.Event{Type: history.TypeOK, Op: d, NS: ns + 2_000_000, Resp: &history.Response{Status: 409,
					Headers: history.Headers{{Name: "Content-Type", Value: "application/problem+json"}},
					Body:    []byte(`{"type":"about:blank","title":"Conflict","detail":"a request with this key is in flight"}`)}}
				put(&ev)
				budget--
				ok(o, ns+5_000_000, 201, respBody, false)
			case r < cfg.DupRate:
				// A sequential duplicate: the replay.
				ok(o, ns+5_000_000, 201, respBody, false)
				d := invoke(attempt+1, ns+6_000_000)
				ok(d, ns+7_000_000, 201, respBody, true)
			default:
				ok(o, ns+5_000_000, 201, respBody, false)
			}
			ns += 7_100_000
		}
		effects = append(effects, effect{int32(t), keyRand, n})
		budget--
	}
	for i := range effects {
		e := &effects[i]
		ev = history.Event{Type: history.TypeEffect, Tenant: tenants[e.tenant], Key: fmt.Sprintf("k-%08x-%04x", e.keyRand, e.n&0xffff),
			Intent: "i" + strconv.Itoa(e.n), Effect: fmt.Sprintf("order ord_%09d", e.n), NS: ns + int64(i)}
		put(&ev)
	}
	if err := bw.Flush(); err != nil && werr == nil {
		werr = err
	}
	return werr
}
