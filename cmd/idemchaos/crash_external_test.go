package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
)

// ordersvcProcess builds examples/ordersvc and returns the scenario hooks
// that start (restart) and SIGKILL it as a real process of its own, on a
// fresh database, listening on addr. It is started once here, the way a
// user's service runs before idemchaos does.
func ordersvcProcess(t *testing.T) (url, dsn, kill, restart, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "ordersvc")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/ordersvc/cmd/ordersvc").CombinedOutput(); err != nil {
		t.Fatalf("build ordersvc: %v\n%s", err, out)
	}
	dsn = pgtest.Database(t)
	addr := closedPort(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	pid := filepath.Join(dir, "pid")
	// restart runs the service in the background and returns once its port
	// accepts connections (bounded: 400 × 25ms); every start is counted.
	restart = fmt.Sprintf(`echo start >> %[1]s/starts; %[2]s --dsn '%[3]s' --addr %[4]s >> %[1]s/ordersvc.log 2>&1 & echo $! > %[5]s; `+
		`for i in $(seq 400); do bash -c 'echo > /dev/tcp/127.0.0.1/%[6]s' 2>/dev/null && exit 0; sleep 0.025; done; exit 1`,
		dir, bin, dsn, addr, pid, port)
	kill = fmt.Sprintf(`echo kill >> %[1]s/kills; kill -KILL "$(cat %[2]s)"`, dir, pid)
	if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
		t.Fatalf("start ordersvc: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pid); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	})
	_ = os.Remove(filepath.Join(dir, "starts")) // count restarts only
	return "http://" + addr, dsn, kill, restart, dir
}

// lines counts the lines of a file (0 when it does not exist).
func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// A crash on an external target, at the immediate point and at a named
// one: the kill hook kills the real process while traffic flows, the crash
// is recorded, the restart hook brings it back, and durable-ack really
// checks acknowledged writes against what survived.
func TestRun_ExternalCrashKillsRestartsAndChecks(t *testing.T) {
	for _, c := range []struct{ point, when string }{
		{"now", "{at: 300ms}"},
		{"after-claim", "{at: 0s}"},
		{"after-commit-before-response", "{at: 200ms}"},
	} {
		t.Run(c.point, func(t *testing.T) {
			url, dsn, kill, restart, dir := ordersvcProcess(t)
			t.Setenv("TMPDIR", t.TempDir())
			t.Setenv(historiesEnv, filepath.Join(os.TempDir(), "idemchaos-histories"))
			scenario := writeFile(t, dir, "crash.yaml", fmt.Sprintf(`name: ordersvc-crash
target: {url: %q}
endpoint:
  path: /orders
  body: '{"sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}'
traffic:
  intents: 30
  concurrency: 4
  spread: 1s
  timeout: 2s
  retry: {max_attempts: 12, base: 50ms, max: 400ms}
faults:
  - kind: crash
    params: {point: %s}
    when: %s
invariants: [exactly-once, durable-ack]
effects:
  oracle: sql
  dsn: %q
  query: SELECT tenant, idem_key, 'order ' || id FROM orders
hooks:
  kill: %q
  restart: %q
`, url, c.point, c.when, dsn, kill, restart))
			hist := filepath.Join(dir, "history.jsonl")
			code, stdout, stderr := runMain(t, "run", "-s", scenario, "--json", "--history", hist)
			if code != ExitClean {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s\nservice log:\n%s", code, stdout, stderr, readFile(dir, "ordersvc.log"))
			}
			if k, s := lines(filepath.Join(dir, "kills")), lines(filepath.Join(dir, "starts")); k != 1 || s != 1 {
				t.Errorf("kill hook ran %d times, restart hook %d; want 1 and 1", k, s)
			}
			f, err := os.Open(hist)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := history.Load(f, history.LoadOptions{})
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			var fired, healed int
			for _, ft := range h.Faults {
				if ft.Kind == "crash" && ft.Action == "fire" {
					fired++
				}
				if ft.Kind == "crash" && ft.Action == "heal" {
					healed++
				}
			}
			if fired != 1 || healed != 1 {
				t.Errorf("crash events: %d fire, %d heal; want 1 and 1", fired, healed)
			}
			rep := decodeReport(t, []byte(stdout))
			if len(rep.Runs) != 1 || len(rep.Runs[0].Steps) != 1 {
				t.Fatalf("report: %d runs, want 1 of one step\n%s", len(rep.Runs), stdout)
			}
			for _, iv := range rep.Runs[0].Steps[0].Invariants {
				if iv.Verdict != "pass" || iv.Checked == 0 {
					t.Errorf("%s: %s, checked %d; want a pass that checked something", iv.Name, iv.Verdict, iv.Checked)
				}
			}
		})
	}
}

func readFile(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// attemptOf finds op's attempt (nil for none).
func attemptOf(h *history.History, op int64) *history.Attempt {
	for i := range h.Attempts {
		if op != 0 && h.Attempts[i].Op == op {
			return &h.Attempts[i]
		}
	}
	return nil
}

// inFlightAt counts the attempts invoked before ns and completed after it
// (or never).
func inFlightAt(h *history.History, ns int64) int {
	n := 0
	for _, a := range h.Attempts {
		if a.Invoke < ns && (a.Complete == 0 || a.Complete > ns) {
			n++
		}
	}
	return n
}

// A crash aimed at attempts on an external target (what init --openapi
// writes): at every seed the kill hook kills the real process while the
// attempt it was aimed at is in flight (its answer held back, or cut by the
// death), once per crash, each followed by its restart, and the
// acknowledged writes survive. A timed crash names no attempt.
func TestRun_ExternalCrashAimedAtAttemptsFiresWithRequestsInFlight(t *testing.T) {
	url, dsn, kill, restart, dir := ordersvcProcess(t)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(historiesEnv, filepath.Join(os.TempDir(), "idemchaos-histories"))
	scenario := writeFile(t, dir, "crash.yaml", fmt.Sprintf(`name: ordersvc-aimed-crash
target: {url: %q}
endpoint:
  path: /orders
  body: '{"sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}'
traffic:
  intents: 8
  concurrency: 4
  spread: 300ms
  timeout: 3s
  retry: {max_attempts: 14, base: 50ms, max: 200ms, max_retry_after: 200ms}
faults:
  - {kind: crash, params: {point: after-claim}, when: {nth: 4}}
invariants: [exactly-once, durable-ack]
effects:
  oracle: sql
  dsn: %q
  query: SELECT tenant, idem_key, 'order ' || id FROM orders
hooks:
  kill: %q
  restart: %q
`, url, dsn, kill, restart))
	kills := 0
	for _, seed := range []string{"1", "2", "3"} {
		hist := filepath.Join(dir, "history-"+seed+".jsonl")
		code, stdout, stderr := runMain(t, "run", "-s", scenario, "--seed", seed, "--history", hist)
		if code != ExitClean {
			t.Fatalf("seed %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s\nservice log:\n%s", seed, code, stdout, stderr, readFile(dir, "ordersvc.log"))
		}
		f, err := os.Open(hist)
		if err != nil {
			t.Fatal(err)
		}
		h, err := history.Load(f, history.LoadOptions{})
		_ = f.Close()
		if err != nil {
			t.Fatalf("seed %s: history: %v", seed, err)
		}
		fired, healed := 0, 0
		for _, ft := range h.Faults {
			switch {
			case ft.Kind == "crash" && ft.Action == "fire":
				fired++
				var d struct {
					AimedAt int64 `json:"aimed_at"`
				}
				_ = json.Unmarshal(ft.Detail, &d)
				a := attemptOf(h, d.AimedAt)
				switch {
				case a == nil:
					t.Errorf("seed %s: the crash at %d ns names no attempt it was aimed at (%s)", seed, ft.NS, ft.Detail)
				case a.Invoke >= ft.NS || (a.Complete != 0 && a.Complete <= ft.NS && a.Outcome != history.Info):
					// An attempt cut by the death (info) may be seen
					// ended a moment before the hook returns.
					t.Errorf("seed %s: the crash at %d ns came outside its attempt op %d (%s, %d–%d ns)", seed, ft.NS, a.Op, a.Outcome, a.Invoke, a.Complete)
				default:
					t.Logf("seed %s: crash aimed at op %d, with %d requests in flight", seed, a.Op, inFlightAt(h, ft.NS))
				}
			case ft.Kind == "crash" && ft.Action == "heal":
				healed++
			}
		}
		kills += fired
		if fired == 0 || healed != fired {
			t.Errorf("seed %s: %d crashes, %d restarts; want at least one, each restarted", seed, fired, healed)
		}
		if k, s := lines(filepath.Join(dir, "kills")), lines(filepath.Join(dir, "starts")); k != kills || s != kills {
			t.Errorf("seed %s: kill hook ran %d times, restart hook %d; want %d each", seed, k, s, kills)
		}
	}
}
