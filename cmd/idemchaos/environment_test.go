package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The environment's fault is exit 3, everywhere: a dead harness database, a
// full disk, an https:// URL against a plain-HTTP port, a target that never
// answers. run, demo and check of the run's history agree, with one line
// naming the cause, and never call it a violation.

// assertEnvironmentHistory checks that a history says the environment
// failed and that check of it agrees: exit 3, naming the cause.
func assertEnvironmentHistory(t *testing.T, path, cause string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(`"type":"environment"`)) {
		t.Fatalf("history %s: %v; it lacks the environment event:\n%.3000s", path, err, b)
	}
	code, stdout, stderr := runMain(t, "check", path)
	if code != ExitUsage || !strings.Contains(stdout, cause) || strings.Contains(stdout, "VIOLATION") {
		t.Fatalf("check %s: exit %d, want 3 naming %q and no violation\nstdout:\n%s\nstderr:\n%s", path, code, cause, stdout, stderr)
	}
	code, stdout, _ = runMain(t, "check", "--json", path)
	var rep struct {
		Verdict  string `json:"verdict"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitUsage || rep.Verdict != "environment-error" || rep.ExitCode != 3 {
		t.Fatalf("check --json %s: exit %d, %+v (%v)", path, code, rep, err)
	}
}

// historyWithEnvironment returns the history under dir that records an
// environment event.
func historyWithEnvironment(t *testing.T, dir string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(`"type":"environment"`)) {
				found = p
			}
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no history under %s records the environment's failure", dir)
	}
	return found
}

// postmasters returns the Postgres servers the binary started: its own
// children named postgres (the primary and any standby).
func postmasters(parent int) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		name := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		if len(fields) < 2 || name != "postgres" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == parent {
			pid, _ := strconv.Atoi(filepath.Base(p))
			out = append(out, pid)
		}
	}
	return out
}

// TestDemo_PostgresKilledIsAnEnvironmentError: the demo's Postgres killed
// from outside (SIGKILL) while a run sends traffic. It said "0/15 mutants
// caught; NOT OK" and exit 1; it is exit 3 with one line naming the dead
// database, no catch matrix, and the run's history says the same to check.
func TestDemo_PostgresKilledIsAnEnvironmentError(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			args := []string{"demo", "--mutant", "check-then-insert"}
			if asJSON {
				args = append(args, "--json")
			}
			c := startCLI(t, args...)
			c.waitUntil(t, "traffic", func() bool { return len(c.historiesWithInvoke()) >= 1 })
			pids := postmasters(c.cmd.Process.Pid)
			if len(pids) == 0 {
				t.Fatal("no Postgres server among the binary's children")
			}
			for _, pid := range pids {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-c.done:
			case <-time.After(90 * time.Second):
				t.Fatalf("still running 90s after Postgres was killed\nstderr:\n%s", c.stderr.String())
			}
			code := c.cmd.ProcessState.ExitCode()
			stdout, stderr := c.stdout.String(), c.stderr.String()
			last := lastLine(stderr)
			if code != ExitUsage || !strings.HasPrefix(last, "idemchaos: ") || !strings.Contains(last, "database died") {
				t.Fatalf("exit %d, want 3 with one line naming the dead database\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if strings.Contains(stdout, "NOT OK") || strings.Contains(stdout, "CATCH MATRIX") || strings.Contains(stdout, `"violation"`) {
				t.Fatalf("a catch matrix or a violation for a dead database:\n%s", stdout)
			}
			if asJSON {
				var rep struct {
					Verdict  string `json:"verdict"`
					ExitCode int    `json:"exit_code"`
					Error    string `json:"error"`
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Verdict != "environment-error" || rep.ExitCode != 3 || !strings.Contains(rep.Error, "database died") {
					t.Fatalf("JSON report %+v (%v):\n%s", rep, err, stdout)
				}
			}
			assertEnvironmentHistory(t, historyWithEnvironment(t, c.histories), "database died")
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// tinyDisk mounts a 64 KiB tmpfs for the test (a full disk a run fills in
// its first seconds) and unmounts it after.
func tinyDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "full")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=1777"); err != nil {
		t.Fatalf("mount a 64 KiB tmpfs (the tests run as root, as test.sh does): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestDemo_FullDiskIsAnEnvironmentError: the demo's histories on a disk
// that fills up during its first run. It said NOT OK and exit 1; it is exit
// 3 naming the full disk, and the history, cut back to make room, says
// the same to check.
func TestDemo_FullDiskIsAnEnvironmentError(t *testing.T) {
	full := tinyDisk(t)
	bin := buildCLI(t)
	cmd := exec.Command(bin, "demo", "--mutant", "check-then-insert")
	// Wherever the histories go (the temp dir, the working directory),
	// they go to the full disk.
	cmd.Dir = full
	// the run directories stay on /dev/shm (or IDEMCHAOS_RUNDIR); the
	// histories go to the default, under the working directory
	cmd.Env = append(os.Environ(), "TMPDIR="+full, historiesEnv+"=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	last := lastLine(stderr.String())
	if code != ExitUsage || !strings.Contains(last, "disk is full") || strings.Contains(stdout.String(), "NOT OK") {
		t.Fatalf("exit %d (%v), want 3 with one line naming the full disk\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	assertEnvironmentHistory(t, historyWithEnvironment(t, full), "disk is full")
}

// serve answers on a loopback port with h and returns the port's address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// created answers every order 201 with its key, as a correct service's
// first answer would.
var created = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%q}`, r.Header.Get("Idempotency-Key"))
})

// smallTraffic is three intents that give up quickly.
const smallTraffic = "traffic: {intents: 3, concurrency: 3, timeout: 300ms, retry: {max_attempts: 2}}\n"

// runTarget runs a small scenario (its traffic and invariants in extra)
// against target and returns the exit, the output and the history's path.
func runTarget(t *testing.T, target, extra string) (code int, stdout, stderr, hist string) {
	t.Helper()
	dir := t.TempDir()
	s := writeFile(t, dir, "s.yaml", "target: {url: http://127.0.0.1:9}\neffects: {oracle: none}\n"+extra)
	hist = filepath.Join(dir, "h.jsonl")
	code, stdout, stderr = runMain(t, "run", "-s", s, "--target", target, "--history", hist, "--reruns", "0", "--shrink=false")
	return code, stdout, stderr, hist
}

// TestRun_HTTPSAgainstPlainHTTPIsRefusedUpFront: an https:// URL at a
// plain-HTTP port. Every attempt would fail the TLS handshake; the run spent
// its whole retry budget finding that out (14 s for key-reuse) and was
// judged. It is one line before any traffic, exit 3, naming the fix.
func TestRun_HTTPSAgainstPlainHTTPIsRefusedUpFront(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		created(w, r)
	}))
	code, stdout, stderr, hist := runTarget(t, "https://"+addr, smallTraffic)
	if code != ExitUsage || !strings.Contains(stderr, "speaks plain HTTP") || !strings.Contains(stderr, "use http://") || strings.Contains(stdout, "VIOLATION") {
		t.Fatalf("exit %d, want 3 saying plain HTTP\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if n := posts.Load(); n != 0 || fileExists(hist) {
		t.Errorf("%d requests reached the handler, history written: %v; want none before the refusal", n, fileExists(hist))
	}
}

// TestRun_HTTPAgainstTLSPortIsAnEnvironmentError: an http:// URL at a TLS
// port. The TLS server's own front door answers every attempt 400 ("Client
// sent an HTTP request to an HTTPS server") before any handler runs: that
// was judged as the service's answers (exit 2). It is exit 3 naming the
// fix, in run and in check.
func TestRun_HTTPAgainstTLSPortIsAnEnvironmentError(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		created(w, r)
	}))
	t.Cleanup(srv.Close)
	code, stdout, stderr, hist := runTarget(t, "http://"+srv.Listener.Addr().String(), smallTraffic)
	if code != ExitUsage || !strings.Contains(stdout, "speaks TLS to an http:// URL") || strings.Contains(stdout, "VIOLATION") {
		t.Fatalf("exit %d, want 3 saying the target speaks TLS\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("%d requests reached the handler: the 400s were the TLS server's own", n)
	}
	assertEnvironmentHistory(t, hist, "speaks TLS to an http:// URL")
}

// TestRun_SilentTargetIsAnEnvironmentError: a listener that takes
// connections and never answers. Every attempt timed out; it is exit 3
// saying the target answered none, in run and in check.
func TestRun_SilentTargetIsAnEnvironmentError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// The kernel takes the connections into the backlog; nobody accepts.
	code, stdout, stderr, hist := runTarget(t, "http://"+ln.Addr().String(), smallTraffic)
	if code != ExitUsage || !strings.Contains(stdout, "answered none of the run's") || strings.Contains(stdout, "VIOLATION") {
		t.Fatalf("exit %d, want 3 saying the target answered none\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	assertEnvironmentHistory(t, hist, "answered none of the run's")
}

// TestRun_SeedsStopAtAnEnvironmentError: --seeds 1-4 against a target that
// answers nothing. Every seed met the same silent target and waited out its
// retries; the sweep stops after the first, saying how many pairs were not
// run, and the JSON report holds the one run, exit 3.
func TestRun_SeedsStopAtAnEnvironmentError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	dir := t.TempDir()
	s := writeFile(t, dir, "s.yaml", "target: {url: http://127.0.0.1:9}\neffects: {oracle: none}\n"+smallTraffic)
	code, stdout, stderr := runMain(t, "run", "-s", s, "--target", "http://"+ln.Addr().String(), "--seeds", "1-4",
		"--history", filepath.Join(dir, "h"), "--reruns", "0", "--shrink=false", "--json")
	var rep struct {
		Verdict string            `json:"verdict"`
		Runs    []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s\n%s", err, stdout, stderr)
	}
	if code != ExitUsage || rep.Verdict != "environment-error" || len(rep.Runs) != 1 || !strings.Contains(stderr, "3 of 4 scenario × seed pairs not run") {
		t.Fatalf("exit %d, verdict %s, %d runs; want 3, environment-error, 1 run and the pairs not run named\n%s", code, rep.Verdict, len(rep.Runs), stderr)
	}
}

// TestRun_ServiceThatStoppedIsStillJudged: a service that answered some
// attempts and then stopped answering is not the environment's fault: its
// keys are judged (eventually-decided), as its goldens say.
func TestRun_ServiceThatStoppedIsStillJudged(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			created(w, r)
			return
		}
		<-r.Context().Done() // stopped: never answers again
	}))
	code, stdout, stderr, _ := runTarget(t, "http://"+addr, "traffic: {intents: 3, concurrency: 1, timeout: 200ms, retry: {max_attempts: 8, base: 50ms, max: 100ms}}\n"+
		"invariants: [{name: eventually-decided, bound: 500ms}]\n")
	if code == ExitUsage || strings.Contains(stdout, "answered none") {
		t.Fatalf("exit %d: a service that answered and then stopped is judged, not an environment error\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code != ExitViolation || !strings.Contains(stdout, "eventually-decided") {
		t.Fatalf("exit %d, want 1: eventually-decided\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestRun_OracleThatReadsNothingIsASetupSlip: an http oracle that reads a
// listing with no order at all while every request was acknowledged (a
// templated URL never rendered, a wrong path). It accused the service of
// every order "acknowledged but produced no effect"; it is exit 3 in one
// line naming the URL it read and what came back, in run and in check.
func TestRun_OracleThatReadsNothingIsASetupSlip(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/v1/orders", created)
	mux.HandleFunc("/admin/orders", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"orders":[]}`)
	})
	addr := serve(t, mux)
	dir := t.TempDir()
	s := writeFile(t, dir, "s.yaml", "target: {url: http://"+addr+"}\n"+
		"traffic: {intents: 3, concurrency: 1}\ninvariants: [exactly-once]\n"+
		"effects: {oracle: http, url: 'http://"+addr+"/admin/orders', items: '$.orders[*]', tenant: '$.tenant', key: '$.key', id: '$.id'}\n")
	hist := filepath.Join(dir, "h.jsonl")
	code, stdout, stderr := runMain(t, "run", "-s", s, "--history", hist)
	want := "GET http://" + addr + "/admin/orders returned 200 {\"orders\":[]}"
	if code != ExitUsage || !strings.Contains(stdout, want) || !strings.Contains(stdout, "reads the wrong place") || strings.Contains(stdout, "produced no effect") {
		t.Fatalf("exit %d, want 3 naming %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	code, stdout, _ = runMain(t, "check", hist)
	if code != ExitUsage || !strings.Contains(stdout, want) {
		t.Fatalf("check: exit %d, want 3 naming %q\n%s", code, want, stdout)
	}
}
