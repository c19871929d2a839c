package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
)

// buildOrdersvc builds the example service's real command.
func buildOrdersvc(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "ordersvc")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/idemchaos/idemchaos/examples/ordersvc/cmd/ordersvc")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ordersvc: %v\n%s", err, out)
	}
	return bin
}

// startOrdersvcProcess runs `ordersvc --dsn DSN --addr ADDR [--buggy]` as a
// process of its own, and returns its URL once it accepts connections.
func startOrdersvcProcess(t *testing.T, bin, dsn string, buggy bool) string {
	t.Helper()
	addr := closedPort(t)
	args := []string{"--dsn", dsn, "--addr", addr}
	if buggy {
		args = append(args, "--buggy")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// Ready when it accepts a connection (bounded: 15 s, every 20 ms).
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("ordersvc exited: %v\n%s", err, logs.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("ordersvc did not listen on %s within 15s\n%s", addr, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recording runs `idemchaos record` in-process in front of upstream until
// stop is called, which returns its exit code and stderr.
func recording(t *testing.T, upstream, historyFile string, extra ...string) (proxyURL string, stop func() (int, string)) {
	t.Helper()
	u, interrupt, wait := recordingParts(t, upstream, historyFile, extra...)
	return u, func() (int, string) { interrupt(); return wait() }
}

// recordingParts is recording with the interrupt (Ctrl-C) and the wait for
// the command's end apart.
func recordingParts(t *testing.T, upstream, historyFile string, extra ...string) (proxyURL string, interrupt func(), wait func() (int, string)) {
	t.Helper()
	pr, pw := io.Pipe()
	var out bytes.Buffer
	m := &Main{Stdin: strings.NewReader(""), Stdout: &out, Stderr: pw, LookupEnv: func(string) (string, bool) { return "", false }}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"record", "--listen", "127.0.0.1:0", "--upstream", upstream, "--history", historyFile}, extra...)
	code := make(chan int, 1)
	go func() {
		code <- m.Exit(m.Run(ctx, args))
		pw.Close()
	}()
	var mu sync.Mutex
	var errb strings.Builder
	first := make(chan string, 1)
	scanned := make(chan struct{}) // closed once every line written to stderr is in errb
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			errb.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if rest, ok := strings.CutPrefix(sc.Text(), "recording on "); ok {
				first <- strings.Fields(rest)[0]
			}
		}
		close(first)
	}()
	select {
	case u, ok := <-first:
		if !ok {
			cancel()
			t.Fatalf("record ended before listening: exit %d", <-code)
		}
		proxyURL = u
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("record did not start listening within 30s")
	}
	return proxyURL, cancel, func() (int, string) {
		c := <-code
		// The exit line went through the pipe before the code, but the
		// scanner may not have stored it yet: wait for the pipe's end.
		<-scanned
		mu.Lock()
		defer mu.Unlock()
		return c, errb.String()
	}
}

// doubleClicks sends every intent as `copies` simultaneous requests with one
// key and one body, as a user's double (triple) click does, and returns the
// statuses seen.
func doubleClicks(t *testing.T, base string, intents, copies int) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	var mu sync.Mutex
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: copies}}
	for i := 1; i <= intents; i++ {
		tenant := fmt.Sprintf("t%d", i%2+1)
		body := fmt.Sprintf(`{"sku":"A-%d","qty":1}`, i)
		key := fmt.Sprintf("click-%d", i)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for c := 0; c < copies; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer tok-"+tenant)
				req.Header.Set("Idempotency-Key", key)
				req.Header.Set("Content-Type", "application/json")
				<-release
				resp, err := client.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					statuses[-1]++
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[resp.StatusCode]++
			}()
		}
		close(release)
		wg.Wait()
	}
	return statuses
}

// The acceptance test: a double-clicking client against the buggy
// ordersvc (a real process on a real Postgres), recorded by `idemchaos
// record`, is caught by `idemchaos check --effects` reading the orders
// the service really created; against the correct ordersvc the same
// recording judges clean.
func TestRecord_DoubleClicksOnOrdersvcCaughtByCheck(t *testing.T) {
	bin := buildOrdersvc(t)
	for _, c := range []struct {
		name  string
		buggy bool
		code  int
	}{{"buggy", true, 1}, {"correct", false, 0}} {
		t.Run(c.name, func(t *testing.T) {
			dsn := pgtest.Database(t)
			t.Setenv("ORDERSVC_DSN", dsn) // the scenario's oracle reads it
			svc := startOrdersvcProcess(t, bin, dsn, c.buggy)
			hist := filepath.Join(t.TempDir(), "clicks.jsonl")
			proxyURL, stop := recording(t, svc, hist, "-s", ordersvcScenario)
			statuses := doubleClicks(t, proxyURL, 24, 3)
			code, stderr := stop()
			if code != 130 || !strings.Contains(stderr, "history kept: "+hist) {
				t.Fatalf("record: exit %d, want 130 with the history's path\n%s", code, stderr)
			}
			t.Logf("statuses %v; record: %s", statuses, stderr)
			f, err := os.Open(hist)
			if err != nil {
				t.Fatal(err)
			}
			h, err := history.Load(f, history.LoadOptions{})
			f.Close()
			if err != nil || h.Truncated {
				t.Fatalf("recording: %v (truncated %v)", err, h != nil && h.Truncated)
			}
			if c := h.Meta.Contract; c == nil || c.Profile != "ietf" || c.Reuse != 422 || c.InFlight != 409 {
				t.Errorf("meta contract %+v: the scenario's (ietf), so check judges the recording by it", c)
			}
			if len(h.Attempts) != 24*3 || h.IntentsKnown {
				t.Fatalf("recorded %d attempts (intents known %v), want 72 without intents", len(h.Attempts), h.IntentsKnown)
			}
			for _, a := range h.Attempts {
				if a.Tenant != "t1" && a.Tenant != "t2" {
					t.Fatalf("attempt tenant %q: the scenario's tokens name t1 and t2", a.Tenant)
				}
			}
			// Without effects, exactly-once cannot be judged.
			if code, out, _ := runMain(t, "check", "--invariant", "exactly-once", hist); code != 2 {
				t.Errorf("check without --effects: exit %d, want 2 (unknown)\n%s", code, out)
			}
			code, out, errs := runMain(t, "check", "--json", "--invariant", "exactly-once", "--effects", ordersvcScenario, hist)
			if code != c.code {
				t.Fatalf("check --effects: exit %d, want %d\n%s\n%s", code, c.code, out, errs)
			}
			inv := decodeReport(t, []byte(out)).Runs[0].Steps[0].Invariants[0]
			t.Logf("exactly-once: %s, %d violating keys", inv.Verdict, len(inv.Violations))
			if c.buggy && (inv.Name != "exactly-once" || len(inv.Violations) == 0) {
				t.Errorf("buggy: %s %s with %d violations, want exactly-once violated", inv.Name, inv.Verdict, len(inv.Violations))
			}
			if !c.buggy && inv.Verdict != "pass" {
				t.Errorf("correct: exactly-once %s, want pass\n%s", inv.Verdict, out)
			}
		})
	}
}

func TestRecord_RefusesNonLoopbackAndBadEffects(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	none := writeFile(t, dir, "none.yaml", "target: {url: \"http://127.0.0.1:9\"}\neffects: {oracle: none}\n")
	// check --effects reads through the gate too: every form of DSN, and a
	// file's target.allow_remote demands --allow-remote.
	sqlAt := func(name, dsn string) string {
		return writeFile(t, dir, name, "target: {url: \"http://127.0.0.1:9\"}\neffects:\n  oracle: sql\n  dsn: \""+dsn+"\"\n  query: SELECT 1, 2, 3\n")
	}
	remoteDSN := sqlAt("remote-dsn.yaml", "postgres://u@203.0.113.9:5432/db")
	multiDSN := sqlAt("multi-dsn.yaml", "host=127.0.0.1,203.0.113.9 port=1,5432 dbname=db")
	namedDSN := sqlAt("named-dsn.yaml", "host=db.example.com dbname=db")
	declared := writeFile(t, dir, "declared.yaml", "target:\n  url: https://api.example.com\n  allow_remote: true\neffects: {oracle: http, url: \"http://127.0.0.1:9/e\", items: \"$[*]\", tenant: \"$.t\", key: \"$.k\", id: \"$.id\"}\n")
	clean := "../../testdata/examples/response-drop-clean.jsonl"
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"remote upstream":  {[]string{"record", "--upstream", "http://10.1.2.3:8080", "--history", hist}, "not a loopback address; pass --allow-remote"},
		"remote listen":    {[]string{"record", "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9", "--history", hist}, "--listen 0.0.0.0:0 listens on every interface"},
		"no listen host":   {[]string{"record", "--listen", ":0", "--upstream", "http://127.0.0.1:9", "--history", hist}, "--listen :0 listens on every interface"},
		"off-box listen":   {[]string{"record", "--listen", "192.0.2.5:0", "--upstream", "http://127.0.0.1:9", "--history", hist}, "--listen 192.0.2.5:0 is not a loopback address"},
		"upstream by DNS":  {[]string{"record", "--upstream", "http://api.example.com", "--history", hist}, `"api.example.com" is not in`},
		"effects dsn":      {[]string{"check", "--effects", remoteDSN, clean}, "remote-dsn.yaml:4:8: effects.dsn 203.0.113.9:5432 is not a loopback address"},
		"effects hosts":    {[]string{"check", "--effects", multiDSN, clean}, "multi-dsn.yaml:4:8: effects.dsn 203.0.113.9:5432 is not a loopback address"},
		"effects by DNS":   {[]string{"check", "--effects", namedDSN, clean}, `named-dsn.yaml:4:8: effects.dsn db.example.com:5432: "db.example.com" is not in`},
		"effects declared": {[]string{"check", "--effects", declared, clean}, "declared.yaml:3:3: target.allow_remote: declared declares a target off this machine"},
		"bad upstream":     {[]string{"record", "--upstream", "127.0.0.1:9", "--history", hist}, "want http://host:port"},
		"no history":       {[]string{"record", "--upstream", "http://127.0.0.1:9"}, `"history" not set`},
		"effects none":     {[]string{"check", "--effects", none, "../../testdata/examples/response-drop-clean.jsonl"}, `effects.oracle is "none"`},
		"effects missing":  {[]string{"check", "--effects", filepath.Join(dir, "nope.yaml"), "../../testdata/examples/response-drop-clean.jsonl"}, "nope.yaml"},
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

// Ctrl-C while a request is in flight: record stops accepting, lets the
// request finish and records its answer, then closes the history (exit
// 130, the path printed) — nothing cut off mid-line.
func TestRecord_InterruptFinishesRequestsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":1}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	hist := filepath.Join(t.TempDir(), "h.jsonl")
	proxyURL, interrupt, wait := recordingParts(t, "http://"+ln.Addr().String(), hist, "--tenant-header", "X-Tenant")
	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, proxyURL+"/orders", strings.NewReader(`{}`))
		req.Header.Set("X-Tenant", "acme")
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	<-arrived
	interrupt()
	// Shutting down closes the listener first: once a dial is refused,
	// the request is in flight during the shutdown (bounded: 10 s).
	addr := strings.TrimPrefix(proxyURL, "http://")
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("record still accepts connections 10s after the interrupt")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	code, stderr := wait()
	if code != 130 || !strings.Contains(stderr, "history kept: "+hist) {
		t.Fatalf("exit %d, want 130 with the path\n%s", code, stderr)
	}
	if s := <-got; s != http.StatusCreated {
		t.Errorf("the client got %d, want the upstream's 201", s)
	}
	f, err := os.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil || h.Truncated || len(h.Attempts) != 1 {
		t.Fatalf("history: %v, truncated %v, %d attempts", err, h != nil && h.Truncated, len(h.Attempts))
	}
	if a := h.Attempts[0]; a.Tenant != "acme" || a.Key != "k1" || a.Status != http.StatusCreated {
		t.Errorf("attempt %+v: want tenant acme, key k1, 201", a)
	}
}
