package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

// checked returns how many instances an invariant judged in a report.
func checked(r report.Report, name string) (n int, verdict string) {
	for _, run := range r.Runs {
		for _, st := range run.Steps {
			for _, iv := range st.Invariants {
				if iv.Name == name {
					n += iv.Checked
					verdict = iv.Verdict
				}
			}
		}
	}
	return n, verdict
}

// keysOf returns the keys a history's attempts carried and the keys of its effects.
func keysOf(t *testing.T, path string) (sent, effects map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sent, effects = map[string]bool{}, map[string]bool{}
	for _, a := range h.Attempts {
		sent[a.Key] = true
	}
	for _, e := range h.Effects {
		effects[e.Key] = true
	}
	return sent, effects
}

// Two real idemchaos processes drive one real ordersvc process at once;
// check --together judges their histories as one system: clean against
// the correct service, the check-then-insert race caught against --buggy.
func TestTogether_TwoDriversOneOrdersvc(t *testing.T) {
	bin, svc := buildCLI(t), buildOrdersvc(t)
	wd, _ := os.Getwd()
	for _, buggy := range []bool{false, true} {
		t.Run(fmt.Sprintf("buggy=%v", buggy), func(t *testing.T) {
			dsn := pgtest.Database(t)
			url := startOrdersvcProcess(t, svc, dsn, buggy)
			dir := t.TempDir()
			env := []string{"ORDERSVC_DSN=" + dsn, "TMPDIR=" + t.TempDir()}
			files := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
			var wg sync.WaitGroup
			codes, errs := make([]int, 2), make([]string, 2)
			for i := range files {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], _, errs[i] = runCLI(t, bin, wd, env, "run", "-s", ordersvcScenario, "--target", url,
						"--seed", fmt.Sprint(i+1), "--history", files[i])
				}()
			}
			wg.Wait()
			var sum int
			var sentA, sentB map[string]bool
			for i, f := range files {
				if codes[i] == ExitUsage || (!buggy && codes[i] != ExitClean) {
					// Each driver's own verdict holds too: the other's
					// orders are noted, not judged.
					t.Fatalf("driver %d: exit %d\n%s", i+1, codes[i], errs[i])
				}
				c, out, stderr := runCLI(t, bin, wd, nil, "check", "--json", f)
				if c == ExitUsage {
					t.Fatalf("check %s: %s", f, stderr)
				}
				n, _ := checked(decodeReport(t, out), "exactly-once")
				sum += n
				sent, _ := keysOf(t, f)
				if i == 0 {
					sentA = sent
				} else {
					sentB = sent
				}
			}
			for k := range sentA {
				if sentB[k] {
					t.Fatalf("key %q sent by both drivers: the per-run nonce failed", k)
				}
			}
			// Both drove the same service: the effects one of them read
			// include orders made by the other's keys.
			_, fxA := keysOf(t, files[0])
			_, fxB := keysOf(t, files[1])
			foreign := 0
			for k := range fxA {
				if sentB[k] {
					foreign++
				}
			}
			for k := range fxB {
				if sentA[k] {
					foreign++
				}
			}
			if foreign == 0 {
				t.Fatalf("neither driver's effects show the other's orders: not one service")
			}

			code, out, stderr := runCLI(t, bin, wd, nil, append([]string{"check", "--together", "--json"}, files...)...)
			rep := decodeReport(t, out)
			n, verdict := checked(rep, "exactly-once")
			if n != sum {
				t.Errorf("together: exactly-once judged %d intents, the two files alone %d", n, sum)
			}
			want, wantVerdict := ExitClean, "pass"
			if buggy {
				want, wantVerdict = ExitViolation, "violation"
			}
			if code != want || verdict != wantVerdict || len(rep.Runs) != 1 {
				t.Fatalf("check --together: exit %d, exactly-once %s, %d runs; want %d, %s, 1\n%s\n%s", code, verdict, len(rep.Runs), want, wantVerdict, out, stderr)
			}
			if buggy && !strings.Contains(string(out), "exactly-once") {
				t.Errorf("no exactly-once explanation:\n%s", out)
			}
		})
	}
}
