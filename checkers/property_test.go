package checkers_test

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// intentPlan is what one generated intent does. Every intent is acknowledged
// in the end and has exactly one effect: the history of a correct service.
type intentPlan struct {
	id, tenant, key string
	payload         string
	start           int64
	// infos is the number of attempts before the acknowledged one whose
	// response was dropped (info); the retries that follow get the replay.
	infos int
	// conflict: a double click during the acknowledged attempt, answered 409.
	conflict bool
	// waiter: a double click during the acknowledged attempt that waits for
	// it and gets the byte-identical replay.
	waiter bool
	// replays is the number of sequential retries after the acknowledgment.
	replays int
	// effectIntent: the oracle could tell the effect's intent.
	effectIntent bool
	// noEffect: the request was never executed for this intent (it was
	// answered from another tenant's record), so the oracle finds nothing.
	noEffect bool
}

// respBody is the response that identifies one execution: its order id is
// unique and it names its tenant, so no two intents ever share it.
func (p intentPlan) respBody() string {
	return fmt.Sprintf(`{"id":"ord-%s","tenant":"%s","status":"created"}`, p.id, p.tenant)
}

func drawPlan(t *rapid.T) []intentPlan {
	tenants := rapid.IntRange(1, 3).Draw(t, "tenants")
	n := rapid.IntRange(1, 12).Draw(t, "intents")
	// Few payloads, so that distinct intents often send byte-identical
	// bodies (a user really buying twice) under their own keys.
	payloads := []string{`{"sku":"lamp","qty":1}`, `{"sku":"desk","qty":1}`, "\xff\x00binary\xfe"}
	plan := make([]intentPlan, n)
	for i := range plan {
		plan[i] = intentPlan{
			id:           strconv.Itoa(i + 1),
			tenant:       "t" + strconv.Itoa(rapid.IntRange(1, tenants).Draw(t, "tenant")),
			key:          "k-" + strconv.Itoa(i+1),
			payload:      rapid.SampledFrom(payloads).Draw(t, "payload"),
			start:        int64(rapid.IntRange(0, 1000).Draw(t, "start_ms")) * 1e6,
			infos:        rapid.IntRange(0, 3).Draw(t, "infos"),
			conflict:     rapid.Bool().Draw(t, "conflict"),
			waiter:       rapid.Bool().Draw(t, "waiter"),
			replays:      rapid.IntRange(0, 2).Draw(t, "replays"),
			effectIntent: rapid.Bool().Draw(t, "effect_intent"),
		}
	}
	return plan
}

// events renders a plan as the harness would record it: attempts interleaved
// in time order, then the effects the oracle read after the run. respBody
// gives the body of each 2xx response (nth is the success's index within
// its intent), so that properties can corrupt one.
func events(plan []intentPlan, respBody func(p intentPlan, nth int) []byte) []history.Event {
	var evs []history.Event
	var op int64
	invoke := func(p intentPlan, attempt int, at int64) int64 {
		op++
		evs = append(evs, history.Event{Type: history.TypeInvoke, Op: op, Intent: p.id, Tenant: p.tenant, Key: p.key, Attempt: attempt, NS: at,
			Req: &history.Request{Method: "POST", Path: "/v1/orders", Headers: history.Headers{{Name: "Idempotency-Key", Value: p.key}}, Body: []byte(p.payload)}})
		return op
	}
	ok := func(o, at int64, status int, body []byte) {
		evs = append(evs, history.Event{Type: history.TypeOK, Op: o, NS: at, Resp: &history.Response{Status: status,
			Headers: history.Headers{{Name: "Content-Type", Value: "application/json"}}, Body: body}})
	}
	const ms = int64(1e6)
	for _, p := range plan {
		t, attempt, nth := p.start, 1, 0
		for range p.infos {
			o := invoke(p, attempt, t)
			evs = append(evs,
				history.Event{Type: history.TypeFault, Fault: "response-drop", Op: o, NS: t + 1},
				history.Event{Type: history.TypeInfo, Op: o, NS: t + 500*ms, Error: "timeout after 500ms"})
			t, attempt = t+501*ms, attempt+1
		}
		ack := invoke(p, attempt, t)
		ok(ack, t+10*ms, 201, respBody(p, nth))
		nth++
		if p.conflict {
			ok(invoke(p, attempt, t+1*ms), t+2*ms, 409, []byte(`{"error":"a request with this key is in flight"}`))
		}
		if p.waiter {
			ok(invoke(p, attempt, t+3*ms), t+11*ms, 201, respBody(p, nth))
			nth++
		}
		t += 12 * ms
		for range p.replays {
			attempt++
			ok(invoke(p, attempt, t), t+1*ms, 201, respBody(p, nth))
			nth++
			t += 2 * ms
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].NS < evs[j].NS })
	for i, p := range plan {
		if p.noEffect {
			continue
		}
		e := history.Event{Type: history.TypeEffect, Tenant: p.tenant, Key: p.key, Effect: "order ord-" + p.id, NS: 10_000*ms + int64(i)}
		if p.effectIntent {
			e.Intent = p.id
		}
		evs = append(evs, e)
	}
	return evs
}

func identical(p intentPlan, _ int) []byte { return []byte(p.respBody()) }

// load writes the events as JSONL and loads them, so the properties run
// through the real codec, body_b64 included.
func load(t *rapid.T, evs []history.Event) *history.History {
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	meta := history.Event{Type: history.TypeMeta, V: history.Version, Scenario: "property", EffectsRecorded: true}
	for _, e := range append([]history.Event{meta}, evs...) {
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	h, err := history.Load(&buf, history.LoadOptions{})
	if err != nil {
		t.Fatalf("load: %v\n%s", err, buf.String())
	}
	return h
}

// violated returns the names of the checkers of Default() that found a
// violation, and fails if any other checker did not pass.
func violated(t *rapid.T, h *history.History) []string {
	r := checkers.Default().Check(h, h.Effects)
	var names []string
	for _, p := range r.Results {
		switch p.Verdict {
		case checkers.Violated:
			names = append(names, p.Name)
		case checkers.Unknown:
			t.Fatalf("%s: unknown on a complete generated history: %s", p.Name, p.Reason)
		}
	}
	return names
}

func TestProperty_CleanHistoryPassesEveryChecker(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		h := load(t, events(drawPlan(t), identical))
		if got := violated(t, h); len(got) > 0 {
			t.Fatalf("a clean history violated %v:\n%v", got, checkers.Default().Check(h, h.Effects).Failures())
		}
	})
}

func TestProperty_InjectedDuplicateEffectFailsExactlyOnce(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		plan := drawPlan(t)
		victim := rapid.IntRange(0, len(plan)-1).Draw(t, "victim")
		evs := events(plan, identical)
		p := plan[victim]
		evs = append(evs, history.Event{Type: history.TypeEffect, Tenant: p.tenant, Key: p.key, Effect: "order ord-" + p.id + "-again", NS: 20e9})
		want := []string{"exactly-once"}
		if p.waiter {
			// By design in-flight-conflict also fires: the waiter's 201
			// overlapped the first attempt, and with two effects on the key
			// that 201 can no longer be told from a second execution
			// ("processing" treated as absent) that happened to be answered
			// with the stored response.
			want = append(want, "in-flight-conflict")
		}
		assertViolated(t, load(t, evs), want)
	})
}

func TestProperty_AlteredReplayByteFailsReplayIdentical(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		plan := drawPlan(t)
		victim := rapid.IntRange(0, len(plan)-1).Draw(t, "victim")
		p := &plan[victim]
		if !p.waiter && p.replays == 0 {
			p.replays = 1 // the victim needs a replay to alter
		}
		successes := 1 + p.replays
		if p.waiter {
			successes++
		}
		nth := rapid.IntRange(1, successes-1).Draw(t, "replay")
		body := []byte(p.respBody())
		pos := rapid.IntRange(0, len(body)-1).Draw(t, "pos")
		body[pos] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
		evs := events(plan, func(q intentPlan, i int) []byte {
			if q.id == p.id && i == nth {
				return body
			}
			return []byte(q.respBody())
		})
		want := []string{"replay-identical"}
		if p.waiter && nth == 1 {
			// By design in-flight-conflict also fires: the altered response
			// went to the duplicate that overlapped the first attempt, and a
			// concurrent duplicate answered 2xx with a different body is a
			// second execution as far as the history can tell.
			want = append(want, "in-flight-conflict")
		}
		assertViolated(t, load(t, evs), want)
	})
}

func TestProperty_CrossTenantReplayFailsTenantIsolation(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		plan := drawPlan(t)
		if len(plan) < 2 {
			plan = append(plan, intentPlan{id: "extra", tenant: "t1", key: "k-extra", payload: "{}"})
		}
		from := rapid.IntRange(0, len(plan)-1).Draw(t, "from")
		to := rapid.IntRange(0, len(plan)-2).Draw(t, "to")
		if to >= from {
			to++
		}
		if plan[to].tenant == plan[from].tenant {
			plan[to].tenant += "-other"
		}
		// Global namespace: every answer tenant B got for its key is the
		// response produced for tenant A, and B's request never executed
		// (the oracle finds no effect for it). Replacing all of B's answers
		// keeps its replays identical to each other, so replay-identical
		// stays quiet: tenant-isolation sees the leak, exactly-once the
		// acknowledged intent without an effect.
		plan[to].noEffect = true
		leaked := []byte(plan[from].respBody())
		evs := events(plan, func(q intentPlan, _ int) []byte {
			if q.id == plan[to].id {
				return leaked
			}
			return []byte(q.respBody())
		})
		assertViolated(t, load(t, evs), []string{"exactly-once", "tenant-isolation"})
	})
}

func assertViolated(t *rapid.T, h *history.History, want []string) {
	got := violated(t, h)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("violated %v, want exactly %v:\n%v", got, want, checkers.Default().Check(h, h.Effects).Failures())
	}
}
