package main

import (
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/examples/ordersvc"
	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/harness/pgtest"
)

func TestMain(m *testing.M) {
	// Inside the network namespace of the gate's test, the binary runs
	// that test's paths and exits.
	maybeNetnsChild()
	// The app record_intents_test.go drives through record.
	maybeRecordApp()
	// Runs against the reference start copies of this test binary.
	harness.MaybeChild()
	// The commands' histories go under the working directory by default:
	// the tests' go to a directory of their own, never into the source
	// tree (a test that wants the default says so).
	if os.Getenv(historiesEnv) == "" {
		dir, err := os.MkdirTemp("", "idemchaos-test-histories-")
		if err != nil {
			panic(err)
		}
		os.Setenv(historiesEnv, filepath.Join(dir, "idemchaos-histories"))
	}
	pgtest.Main(m)
}

const ordersvcScenario = "../../examples/ordersvc/scenario.yaml"

// startOrdersvc serves examples/ordersvc on a loopback port, on a fresh
// database that the scenario's oracle reads (through ORDERSVC_DSN), and
// returns its URL.
func startOrdersvc(t *testing.T, buggy bool) string {
	t.Helper()
	dsn := pgtest.Database(t)
	t.Setenv("ORDERSVC_DSN", dsn)
	// Histories go under the temp dir and outlive the run; keep the
	// test's in its own (after the shared Postgres has started).
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(historiesEnv, filepath.Join(os.TempDir(), "idemchaos-histories"))
	h, err := ordersvc.New(t.Context(), dsn, ordersvc.Options{Buggy: buggy})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// junitReport is the part of the JUnit XML the tests read.
type junitReport struct {
	Suites []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r junitReport
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, b)
	}
	return r
}

// caseVerdicts maps each JUnit test case to its failure message ("" for a pass).
func caseVerdicts(t *testing.T, r junitReport) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range r.Suites {
		for _, c := range s.Cases {
			if _, dup := out[c.Name]; dup {
				t.Errorf("test case %q twice", c.Name)
			}
			out[c.Name] = ""
			if c.Failure != nil {
				out[c.Name] = "FAIL " + c.Failure.Message
			}
		}
	}
	return out
}

var ordersvcInvariants = []string{"exactly-once", "replay-identical", "reuse-rejected"}

func TestRun_OrdersvcCorrectPasses(t *testing.T) {
	url := startOrdersvc(t, false)
	xmlPath := filepath.Join(t.TempDir(), "idemchaos.xml")
	code, stdout, stderr := runMain(t, "run", "-s", ordersvcScenario, "--target", url, "--junit", xmlPath)
	if code != ExitClean {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "PASS  ordersvc") {
		t.Errorf("summary lacks the PASS line:\n%s", stdout)
	}
	got := caseVerdicts(t, readJUnit(t, xmlPath))
	if len(got) != len(ordersvcInvariants) {
		t.Errorf("JUnit cases %v, want one per invariant %v", got, ordersvcInvariants)
	}
	for _, iv := range ordersvcInvariants {
		if v, ok := got[iv]; !ok || v != "" {
			t.Errorf("JUnit case %s: present %v, %q; want a pass", iv, ok, v)
		}
	}
}

func TestRun_OrdersvcBuggyCaught(t *testing.T) {
	url := startOrdersvc(t, true)
	dir := t.TempDir()
	xmlPath, htmlPath := filepath.Join(dir, "idemchaos.xml"), filepath.Join(dir, "idemchaos.html")
	code, stdout, stderr := runMain(t, "run", "-s", ordersvcScenario, "--target", url, "--junit", xmlPath, "--report", htmlPath)
	if code != ExitViolation {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"VIOLATIONS", "exactly-once — ordersvc", "FAIL  ordersvc",
		// The replay command carries the variable the scenario's oracle read.
		"replay: ORDERSVC_DSN=", " idemchaos run -s " + ordersvcScenario + " --seed 1 --target " + url,
		// Re-running against a service that remembers the keys would
		// only re-read this run's effects.
		"not re-run or shrunk"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stderr, "investigating the failing plan") {
		t.Errorf("stderr announces an investigation that a user's service never gets:\n%s", stderr)
	}
	if b, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(b), "exactly-once") {
		t.Errorf("HTML report: %v, %.200s", err, b)
	}
	got := caseVerdicts(t, readJUnit(t, xmlPath))
	if !strings.HasPrefix(got["exactly-once"], "FAIL ") {
		t.Errorf("JUnit case exactly-once: %q, want a <failure>; cases: %v", got["exactly-once"], got)
	}
	if len(got) != len(ordersvcInvariants) {
		t.Errorf("JUnit cases %v, want one per invariant %v", got, ordersvcInvariants)
	}
}

func TestRun_OrdersvcJSON(t *testing.T) {
	url := startOrdersvc(t, false)
	code, stdout, stderr := runMain(t, "run", "-s", ordersvcScenario, "--target", url, "--json")
	if code != ExitClean {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep struct {
		Tool     string `json:"tool"`
		Version  *int   `json:"version"`
		Verdict  string `json:"verdict"`
		ExitCode *int   `json:"exit_code"`
		Runs     []struct {
			Scenario string `json:"scenario"`
			Steps    []struct {
				Invariants []struct {
					Name    string `json:"name"`
					Verdict string `json:"verdict"`
					Checked int    `json:"checked"`
				} `json:"invariants"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if rep.Tool != "idemchaos" || rep.Version == nil || rep.Verdict != "pass" || rep.ExitCode == nil || *rep.ExitCode != 0 {
		t.Errorf("top level: tool %q, version %v, verdict %q, exit_code %v", rep.Tool, rep.Version, rep.Verdict, rep.ExitCode)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Scenario != "ordersvc" || len(rep.Runs[0].Steps) != 1 {
		t.Fatalf("runs: %+v", rep.Runs)
	}
	var names []string
	for _, iv := range rep.Runs[0].Steps[0].Invariants {
		names = append(names, iv.Name)
		if iv.Verdict != "pass" || iv.Checked == 0 {
			t.Errorf("invariant %s: verdict %s, checked %d", iv.Name, iv.Verdict, iv.Checked)
		}
	}
	if strings.Join(names, ",") != strings.Join(ordersvcInvariants, ",") {
		t.Errorf("invariants %v, want %v", names, ordersvcInvariants)
	}
}

// TestRun_ErrorPaths: everything that stops a run before it can judge
// anything exits 3 with one line saying what and where, quickly.
func TestRun_ErrorPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	closed := closedPort(t)
	// A reachable service that answers anything, for the oracle case.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	up := "http://" + ln.Addr().String()

	badOracle := writeFile(t, dir, "bad-oracle.yaml", `target: {url: `+up+`}
traffic: {intents: 1}
effects:
  oracle: sql
  dsn: postgres://postgres@`+closed+`/orders?connect_timeout=3
  query: SELECT tenant, idem_key, id FROM orders
`)
	invalid := writeFile(t, dir, "invalid.yaml", "target: {url: http://127.0.0.1:8090}\neffects: {oracle: none}\ntraffic:\n  intents: many\n")
	crashURL := writeFile(t, dir, "crash.yaml", `target: {url: http://127.0.0.1:8090}
effects: {oracle: none}
faults:
  - kind: crash
    when: {at: 100ms}
`)

	for name, c := range map[string]struct {
		args  []string
		want  []string
		limit time.Duration
	}{
		"no scenario": {
			args: []string{"run", "--target", "http://" + closed},
			want: []string{"-s FILE"}},
		"unreachable target": {
			args: []string{"run", "-s", ordersvcScenario, "--target", "http://" + closed},
			want: []string{"target " + closed + " is unreachable", "connection refused"}, limit: 6 * time.Second},
		// Refused before a single packet is sent: a dial to this address
		// would hang for the 5s reachability timeout.
		"non-loopback target": {
			args: []string{"run", "-s", ordersvcScenario, "--target", "http://10.255.255.1:80"},
			want: []string{"10.255.255.1:80 is not a loopback address", "--allow-remote"}, limit: time.Second},
		"invalid scenario": {
			args: []string{"run", "-s", invalid},
			want: []string{invalid + `:4:12: traffic.intents:`}},
		"failing oracle": {
			args: []string{"run", "-s", badOracle, "--target", up},
			want: []string{"effect oracle", closed}, limit: 6 * time.Second},
		"crash without hooks, url scenario": {
			args: []string{"run", "-s", crashURL},
			want: []string{crashURL + ":4:5:", "crash", "hooks.kill"}},
		"crash without hooks, retargeted": {
			args: []string{"run", "-s", "../../scenarios/crash-mid-request.yaml", "--target", "http://" + closed},
			want: []string{"crash-mid-request: crash on an external target needs hooks"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			code, stdout, stderr := runMain(t, c.args...)
			elapsed := time.Since(start)
			t.Logf("%s: %s", elapsed.Round(time.Millisecond), stderr)
			if code != ExitUsage {
				t.Errorf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "idemchaos: ") {
				t.Errorf("stderr is not one idemchaos: line:\n%s", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if c.limit > 0 && elapsed > c.limit {
				t.Errorf("took %s, want under %s", elapsed.Round(time.Millisecond), c.limit)
			}
		})
	}
}
