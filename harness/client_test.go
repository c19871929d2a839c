package harness_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// testClientEnv makes this test binary a client under test (TestMain):
// "correct" keeps one key per intent and retries 5xx, 429 and resets with
// a jittered backoff that honours Retry-After; "new-key" mints a key per
// attempt; "ignore" never calls IDEMCHAOS_URL; "hang" never ends.
const testClientEnv = "HARNESS_TEST_CLIENT"

func testClient(mode string) int {
	switch mode {
	case "ignore":
		fmt.Println("ord_0")
		return 0
	case "hang":
		time.Sleep(time.Hour)
		return 0
	}
	body, _ := io.ReadAll(os.Stdin)
	url := os.Getenv("IDEMCHAOS_URL") + os.Getenv("IDEMCHAOS_PATH")
	key := newKey()
	c := &http.Client{Timeout: 2 * time.Second}
	indeterminate := false
	for attempt := 1; attempt <= 4; attempt++ {
		if mode == "new-key" {
			key = newKey()
		}
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+os.Getenv("IDEMCHAOS_TOKEN"))
		req.Header.Set("Idempotency-Key", key)
		resp, err := c.Do(req)
		wait := time.Duration(25<<attempt)*time.Millisecond + time.Duration(randN(20))*time.Millisecond
		if err != nil {
			indeterminate = true
			time.Sleep(wait)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			var o struct{ ID string }
			_ = json.Unmarshal(b, &o)
			fmt.Println(o.ID)
			return 0
		case resp.StatusCode == 429 || resp.StatusCode == 409 || resp.StatusCode >= 500:
			indeterminate = indeterminate || resp.StatusCode >= 500
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				wait = time.Duration(s) * time.Second
			}
			time.Sleep(wait)
		default:
			return 1
		}
	}
	if indeterminate {
		return 75
	}
	return 1
}

func newKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func randN(n int) int {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return int(b[0]) % n
}

func clientScenario(t *testing.T, mode, rest string) *scenarios.Scenario {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	y := fmt.Sprintf("client:\n  command: [%q]\n  env: {%s: %s}\n%s", exe, testClientEnv, mode, rest)
	s, err := scenarios.Parse("client.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eventsOf reads a history's events in order.
func eventsOf(t *testing.T, path string) []history.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := history.NewReader(bytes.NewReader(data))
	var out []history.Event
	for {
		var e history.Event
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	return out
}

func TestClientRun_EveryAttemptByListenerFaultsOnItsPath(t *testing.T) {
	s := clientScenario(t, "correct", `  intents: 6
  concurrency: 3
  timeout: 20s
faults:
  - kind: gateway-5xx
    params: {status: 502}
    when: {nth: 2}
  - kind: rate-limit
    params: {retry_after: 1s}
    when: {nth: 3}
`)
	r := runner(t)
	o, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	evs := eventsOf(t, o.HistoryPath)
	if evs[0].Mode != history.ModeClient || evs[0].ClientContract == nil || evs[0].ClientContract.Budget != 5 {
		t.Fatalf("meta %+v: want mode client with its contract", evs[0])
	}
	started, beliefs, effects := map[string]bool{}, map[string]string{}, map[string]int{}
	listeners := map[string]string{}
	keys := map[string]map[string]bool{}
	byOp := map[int64]history.Event{}
	var proxied, forwarded, retryAfter int
	for _, e := range evs {
		switch e.Type {
		case history.TypeInvocation:
			started[e.Intent] = len(e.Body) > 0
		case history.TypeBelief:
			beliefs[e.Intent] = e.Belief
		case history.TypeInvoke:
			if l, seen := listeners[e.Intent]; seen && l != e.Listener {
				t.Errorf("%s: attempts on two listeners %s and %s", e.Intent, l, e.Listener)
			}
			listeners[e.Intent] = e.Listener
			if keys[e.Intent] == nil {
				keys[e.Intent] = map[string]bool{}
			}
			keys[e.Intent][e.Key] = true
			byOp[e.Op] = e
		case history.TypeOK:
			if e.By == "proxy" {
				proxied++
				if e.Forwarded {
					forwarded++
				}
			}
			if e.RetryAfterMS == 1000 {
				retryAfter++
			}
		case history.TypeEffect:
			if e.EffectKind() == "order" {
				effects[e.Intent]++
			}
		}
	}
	if len(started) != 6 || len(beliefs) != 6 || len(listeners) != 6 {
		t.Fatalf("invocations %v, beliefs %v, listeners %v: want 6 each", started, beliefs, listeners)
	}
	for in, b := range beliefs {
		if b != history.BeliefSuccess || effects[in] != 1 || len(keys[in]) != 1 || !started[in] {
			t.Errorf("%s: belief %s, %d effects, keys %v: want success, one effect, one key", in, b, effects[in], keys[in])
		}
	}
	// i2 and i4 get a 502 after execution (forwarded); i3 and i6 a 429
	// (not forwarded; the later fault of the list wins i6's attempt).
	if proxied != 4 || forwarded != 2 || retryAfter != 2 {
		t.Errorf("proxy answers %d (forwarded %d), Retry-After 1s %d: want 4 (2), 2 (history %s)", proxied, forwarded, retryAfter, o.HistoryPath)
	}
}

func TestClientRun_AClientThatIgnoresItsAddressIsTheEnvironments(t *testing.T) {
	s := clientScenario(t, "ignore", "  intents: 2\n")
	r := runner(t)
	_, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 1})
	if !errors.Is(err, harness.ErrSetup) || !strings.Contains(err.Error(), "ignored IDEMCHAOS_URL") {
		t.Fatalf("err %v: want a setup error naming IDEMCHAOS_URL", err)
	}
}

func TestClientRun_KilledAtTimeoutIsAFailure(t *testing.T) {
	s := clientScenario(t, "hang", "  intents: 1\n  timeout: 300ms\n")
	r := runner(t)
	o, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 1})
	if err == nil || o == nil {
		t.Fatalf("err %v: a client that sent nothing is the environment's", err)
	}
	var belief *history.Event
	for _, e := range eventsOf(t, o.HistoryPath) {
		if e.Type == history.TypeBelief {
			belief = &e
		}
	}
	if belief == nil || belief.Belief != history.BeliefFailure || !strings.Contains(belief.Error, "killed at timeout 300ms") {
		t.Fatalf("belief %+v: want failure, killed at timeout", belief)
	}
}

func TestClientRun_CutsStallsAndRefusalsSayWhetherTheyForwarded(t *testing.T) {
	s := clientScenario(t, "correct", `  intents: 4
  timeout: 20s
steps:
  - name: cuts
    faults:
      - {kind: response-drop, when: {nth: 1}}
  - name: refusals
    faults:
      - {kind: refuse, params: {how: reset}, when: {nth: 2}}
      - {kind: reject, params: {status: 403}, when: {nth: 3, every: true}}
  - name: stall
    intents: 1
    faults:
      - {kind: stall, params: {hold: 10s}, when: {nth: 1}}
  - name: outage
    faults:
      - {kind: unavailable, params: {no_retry_after: true}, when: {at: 0s, for: 1m}}
`)
	r := runner(t)
	o, err := r.Run(context.Background(), s, harness.RunOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		typ       history.Type
		forwarded bool
	}
	var got []seen
	window := 0
	for _, e := range eventsOf(t, o.HistoryPath) {
		if e.By == "proxy" && e.Type != history.TypeOK {
			got = append(got, seen{e.Type, e.Forwarded})
		}
		if e.By == "proxy" && e.Resp != nil && e.Resp.Status == 503 {
			window++
		}
	}
	// 4 resets after execution (info, forwarded); 2 resets before
	// forwarding (fail, not forwarded); 1 stall (info, forwarded).
	var info, fail int
	for _, g := range got {
		switch {
		case g.typ == history.TypeInfo && g.forwarded:
			info++
		case g.typ == history.TypeFail && !g.forwarded:
			fail++
		default:
			t.Errorf("proxy event %+v", g)
		}
	}
	// The window lasts the whole step: every attempt of its 4 intents.
	if info != 5 || fail != 2 || window != 16 {
		t.Errorf("%d info (want 5), %d fail (want 2), %d 503s in the window (want 16): %+v (history %s)", info, fail, window, got, o.HistoryPath)
	}
}

// A Go SDK under test in-process: one that mints a key per attempt is
// caught by key-stable (its retry after a 502 is a second order), a
// correct one passes the same scenario.
func TestTestClient_GoSDKInProcess(t *testing.T) {
	scenario := func(t *testing.T) *scenarios.Scenario {
		s, err := scenarios.Parse("go-client.yaml", []byte(`
client:
  command: ["in-process"]
  intents: 3
invariants: [key-stable, payload-stable, keyed-retry, truthful-outcome]
faults:
  - kind: gateway-5xx
    params: {status: 502}
    when: {fraction: 1}
`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	do := func(perAttempt bool) harness.ClientDo {
		return func(ctx context.Context, base string, in harness.Intent) (harness.Belief, error) {
			key := newKey()
			for range 3 {
				if perAttempt {
					key = newKey()
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+in.Path, bytes.NewReader(in.Body))
				req.Header.Set("Authorization", "Bearer "+in.Token)
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return harness.Belief{Outcome: harness.Unknown}, err
				}
				var o struct{ ID string }
				_ = json.NewDecoder(resp.Body).Decode(&o)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return harness.Belief{Outcome: harness.Succeeded, Resource: o.ID}, nil
				}
				time.Sleep(time.Duration(50+randN(50)) * time.Millisecond)
			}
			return harness.Belief{Outcome: harness.Unknown}, nil
		}
	}
	harness.TestClient(t, harness.ClientCase{Do: do(false), Steps: []harness.Step{{Inline: scenario(t)}}})
	harness.TestClient(t, harness.ClientCase{Do: do(true), Steps: []harness.Step{{Inline: scenario(t), ExpectViolation: "key-stable"}}})
}

// TestTestClient_OnTheTeamsOwnService: ClientCase.Env points a Go SDK's
// upstream at the team's service, as --target does for a client scenario.
// The scenario names a dead origin; its effects.url moves with the target
// (so exactly-once reads the service's own orders), an SDK that re-keys
// its retry after a 502 made two orders and is caught, and the failure's
// replay names the target.
func TestTestClient_OnTheTeamsOwnService(t *testing.T) {
	dead := "http://127.0.0.1:9"
	s, err := scenarios.Parse("sdk-on-shop.yaml", []byte(strings.ReplaceAll(shopEndpoint+shopEffects+`
client:
  command: ["in-process"]
  intents: 4
invariants: [key-stable, exactly-once]
faults:
  - kind: gateway-5xx
    params: {status: 502}
    when: {fraction: 1}
`, "SERVICE", dead)))
	if err != nil {
		t.Fatal(err)
	}
	sdk := func(rekey bool) harness.ClientDo {
		return func(ctx context.Context, base string, in harness.Intent) (harness.Belief, error) {
			key := newKey()
			for range 3 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+in.Path, bytes.NewReader(in.Body))
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return harness.Belief{Outcome: harness.Unknown}, err
				}
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return harness.Belief{Outcome: harness.Succeeded}, nil
				}
				if rekey {
					key = newKey()
				}
				time.Sleep(time.Duration(20+randN(30)) * time.Millisecond)
			}
			return harness.Belief{Outcome: harness.Unknown}, nil
		}
	}
	for name, rekey := range map[string]bool{"one-key": false, "rekeys": true} {
		t.Run(name, func(t *testing.T) {
			shop := newShop(false)
			srv := httptest.NewServer(shop)
			t.Cleanup(srv.Close)
			tb := &fakeTB{}
			harness.TestClient(tb, harness.ClientCase{Do: sdk(rekey), Env: harness.ExternalEnv(srv.URL),
				Steps: []harness.Step{{Inline: s, Seed: 2}}})
			tb.done()
			got := strings.Join(tb.errors, "\n")
			shop.mu.Lock()
			orders := len(shop.orders)
			shop.mu.Unlock()
			switch {
			case !rekey && got != "":
				t.Fatalf("an SDK keeping one key failed on the team's service:\n%s", got)
			case !rekey && orders != 4:
				t.Fatalf("the service made %d orders for 4 intents: the SDK's upstream was not the target", orders)
			case rekey && orders <= 4:
				t.Fatalf("the re-keying SDK made %d orders for 4 intents: the 502s were not after execution", orders)
			case rekey && (!strings.Contains(got, "key-stable") || !strings.Contains(got, "exactly-once")):
				t.Fatalf("the re-keying SDK (%d orders) was not caught by key-stable and exactly-once:\n%s", orders, got)
			case rekey && !strings.Contains(got, "--target "+srv.URL):
				t.Fatalf("the replay does not name the target %s:\n%s", srv.URL, got)
			}
			if s.Target.URL != dead || s.Effects.URL != dead+"/effects" {
				t.Errorf("the caller's inline scenario was changed: %s, %s", s.Target.URL, s.Effects.URL)
			}
		})
	}
}

// An upstream that never answers: the client gives up at its own
// deadline, and the step ends then — the attempts still forwarded are cut
// and recorded as the proxy's 502, not waited for until the forward's own
// two-minute bound.
func TestTestClient_AHungUpstreamDoesNotHoldTheStep(t *testing.T) {
	hung := make(chan struct{})
	shop := newShop(false)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-hung:
			case <-r.Context().Done():
			}
			return
		}
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hung) })
	s, err := scenarios.Parse("hung.yaml", []byte(strings.ReplaceAll(shopEndpoint+shopEffects+`
client:
  command: ["in-process"]
  intents: 2
invariants: [key-stable]
`, "SERVICE", srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	do := func(ctx context.Context, base string, in harness.Intent) (harness.Belief, error) {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+in.Path, bytes.NewReader(in.Body))
		req.Header.Set("Idempotency-Key", newKey())
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		return harness.Belief{Outcome: harness.Unknown}, nil
	}
	start := time.Now()
	tb := &fakeTB{}
	harness.TestClient(tb, harness.ClientCase{Do: do, Env: harness.ExternalEnv(srv.URL), Steps: []harness.Step{{Inline: s, Seed: 1}}})
	tb.done()
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the step took %s with an upstream that never answers: it waited for the forwards", took)
	}
}
