package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// recordAppEnv makes this test binary the app under test: a real process
// whose checkout calls a payment API (through record) and retries — with
// a new key per attempt ("rekey", the bug) or one key per checkout
// ("stable") — passing the test suite's intent header on.
const recordAppEnv = "IDEMCHAOS_TEST_RECORD_APP"

// maybeRecordApp is TestMain's hook: as the app, serve until killed.
func maybeRecordApp() {
	mode := os.Getenv(recordAppEnv)
	if mode == "" {
		return
	}
	api := os.Getenv(recordAppEnv + "_API")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Printf("app on http://%s\n", ln.Addr())
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	newKey := func() string { b := make([]byte, 8); _, _ = rand.Read(b); return hex.EncodeToString(b) }
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := newKey()
		for attempt := 1; attempt <= 4; attempt++ {
			if mode == "rekey" && attempt > 1 {
				key = newKey() // the classic bug: the key is minted inside the retry loop
			}
			req, _ := http.NewRequest(http.MethodPost, api+"/payments", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			req.Header.Set("X-Test-Intent", r.Header.Get("X-Test-Intent"))
			resp, err := client.Do(req)
			if err == nil && resp.StatusCode < 500 {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				w.WriteHeader(resp.StatusCode)
				_, _ = w.Write(b)
				return
			}
			if err == nil {
				resp.Body.Close()
			}
			time.Sleep(time.Duration(attempt*20) * time.Millisecond) // the app's own backoff
		}
		http.Error(w, "payment failed", http.StatusBadGateway)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

// paymentAPI is the upstream: idempotent by key (a repeat replays the
// first answer), counting the requests that carried the intent header
// (record must not forward it).
func paymentAPI(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var mu sync.Mutex
	paid := map[string]string{}
	var leaked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Intent") != "" {
			leaked.Add(1)
		}
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		id, ok := paid[k]
		if !ok {
			id = fmt.Sprintf("pay_%d", len(paid)+1)
			paid[k] = id
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	t.Cleanup(srv.Close)
	return srv, &leaked
}

// startRecordApp runs this binary as the app in mode, calling api.
func startRecordApp(t *testing.T, mode, api string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), recordAppEnv+"="+mode, recordAppEnv+"_API="+api)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("the app printed no address: %v", sc.Err())
	}
	addr, ok := strings.CutPrefix(sc.Text(), "app on ")
	if !ok {
		t.Fatalf("the app said %q", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return addr
}

// TestRecord_IntentHeaderCatchesARekeyingAppFromItsSuite: the app's own
// end-to-end suite (a loop of checkouts, each naming its intent) drives
// the real app, whose calls to the payment API go through `record
// --intent-header --faults`; the first attempt of every intent loses its
// answer after the API executed, the app retries, and check of the
// recording catches key-stable for the app that re-keys and is clean
// for the one that keeps its key.
func TestRecord_IntentHeaderCatchesARekeyingAppFromItsSuite(t *testing.T) {
	const intents = 6
	for _, c := range []struct {
		mode string
		code int
	}{{"rekey", 1}, {"stable", 0}} {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			drops := writeFile(t, dir, "drops.yaml", "faults:\n  - kind: response-drop\n    when: {fraction: 1}\n")
			api, leaked := paymentAPI(t)
			hist := filepath.Join(dir, "e2e.jsonl")
			proxyURL, stop := recording(t, api.URL, hist, "--intent-header", "X-Test-Intent", "--faults", drops, "--seed", "3")
			app := startRecordApp(t, c.mode, proxyURL)
			// The suite: one checkout per user action.
			for i := range intents {
				req, _ := http.NewRequest(http.MethodPost, app+"/checkout", strings.NewReader(fmt.Sprintf(`{"cart":%d}`, i)))
				req.Header.Set("X-Test-Intent", fmt.Sprintf("checkout-%d", i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("checkout %d: %d, want 201 after the app's retry", i, resp.StatusCode)
				}
			}
			if code, stderr := stop(); code != 130 {
				t.Fatalf("record: exit %d\n%s", code, stderr)
			}
			if n := leaked.Load(); n != 0 {
				t.Errorf("%d requests reached the API with the intent header: record must not forward it", n)
			}
			f, err := os.Open(hist)
			if err != nil {
				t.Fatal(err)
			}
			h, err := history.Load(f, history.LoadOptions{})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !h.Client() || !h.IntentsKnown {
				t.Fatalf("meta mode %q, intents known %v: want a client history", h.Meta.Mode, h.IntentsKnown)
			}
			drops0 := 0
			for _, fl := range h.Faults {
				if fl.Kind == "response-drop" && fl.Action == "fire" {
					drops0++
				}
			}
			retried := map[string]bool{}
			dropped := 0
			for _, a := range h.Attempts {
				if a.Number == 1 && a.Proxied && a.Forwarded && !a.HasResp {
					dropped++
				}
				if a.Number == 2 && a.Status == http.StatusCreated {
					retried[a.Intent] = true
				}
			}
			t.Logf("%d attempts, %d response-drop fired, %d first attempts dropped, %d intents retried", len(h.Attempts), drops0, dropped, len(retried))
			if drops0 != intents || dropped != intents || len(retried) != intents {
				t.Fatalf("want %d drops fired, %d dropped first attempts and %d retries recorded", intents, intents, intents)
			}
			// The whole client suite: what a proxy cannot see (the app's
			// belief, the effects) is unknown, so a clean recording exits 2.
			if code, out, _ := runMain(t, "check", hist); code != map[int]int{1: 1, 0: 2}[c.code] || !strings.Contains(out, "UNKNOWN       truthful-outcome") {
				t.Errorf("check of the whole suite: exit %d\n%s", code, out)
			}
			code, out, errs := runMain(t, "check", "--json", "--invariant", "key-stable", hist)
			if code != c.code {
				t.Fatalf("check: exit %d, want %d\n%s\n%s", code, c.code, out, errs)
			}
			inv := decodeReport(t, []byte(out)).Runs[0].Steps[0].Invariants[0]
			t.Logf("key-stable: %s, %d violations", inv.Verdict, len(inv.Violations))
			if c.code == 1 && (inv.Name != "key-stable" || len(inv.Violations) == 0) {
				t.Errorf("rekey: %s %s, want key-stable violated", inv.Name, inv.Verdict)
			}
			if c.code == 0 && inv.Verdict != "pass" {
				t.Errorf("stable: key-stable %s, want pass\n%s", inv.Verdict, out)
			}
		})
	}
}

// TestRecord_FaultsNeedAnIntentHeaderAndClientKinds: --faults without
// --intent-header is a usage error; a server fault is refused at its
// file:line:col.
func TestRecord_FaultsNeedAnIntentHeaderAndClientKinds(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	drops := writeFile(t, dir, "drops.yaml", "faults:\n  - kind: response-drop\n")
	crash := writeFile(t, dir, "crash.yaml", "faults:\n  - kind: crash\n")
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no intent header": {[]string{"record", "--upstream", "http://127.0.0.1:9", "--history", hist, "--faults", drops}, "--faults needs --intent-header"},
		"server fault":     {[]string{"record", "--upstream", "http://127.0.0.1:9", "--history", hist, "--intent-header", "X-I", "--faults", crash}, "crash.yaml:2:11: faults[0].kind: crash does not act on a client's path"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errs := runMain(t, c.args...)
			if code != 3 || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, want 3 with %q\n%s", code, c.want, errs)
			}
		})
	}
	if _, err := os.Stat(hist); err == nil {
		t.Error("a refused record created its history file")
	}
}
