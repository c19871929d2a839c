package foreign_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/examples/foreign"
	"github.com/idemchaos/idemchaos/harness/mariadbtest"
	"github.com/idemchaos/idemchaos/harness/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// corpusSeeds is what go test runs of each case: seeds 1 and 2, or
// CORPUS_SEEDS (N: seeds 1..N; "52,61" or "30-35": those seeds, see
// [foreign.ParseSeeds]); the bench section "foreign" runs 20 of every
// flawed case and 100 of every correct one.
func corpusSeeds(t *testing.T) []int64 {
	v := os.Getenv("CORPUS_SEEDS")
	if v == "" {
		return []int64{1, 2}
	}
	s, err := foreign.ParseSeeds(v)
	if err != nil {
		t.Fatalf("CORPUS_SEEDS: %v", err)
	}
	return s
}

// TestCorpus runs every service of the corpus as its own process on
// loopback and idemchaos against it through the Go API: a correct service
// must be clean at every seed, a flawed one caught at every seed by the
// expected invariant with a matching cause. A case listed in
// foreign.KnownMiss is run and its verdicts logged, wrong ones included, so
// the gap stays visible; it does not fail the test.
func TestCorpus(t *testing.T) {
	ctx := t.Context()
	seeds := corpusSeeds(t)
	bin, err := foreign.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := foreign.ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli := buildCLI(t, root)
	// Histories are kept when the test fails, so that the paths it prints
	// can be opened (and with FOREIGN_KEEP_HISTORIES set, always).
	hist, err := os.MkdirTemp("", "foreign-histories-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("FOREIGN_KEEP_HISTORIES") == "" {
			_ = os.RemoveAll(hist)
		}
	})
	var table []string
	for _, c := range foreign.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			e := foreign.Env{Bin: bin, Root: root, HistoryDir: hist,
				Database: func(_ context.Context, kind foreign.DatabaseKind, _ string) (foreign.DB, func(), error) {
					switch kind {
					case foreign.Postgres:
						dsn := pgtest.Database(t)
						return foreign.DB{Service: dsn, Oracle: dsn}, func() {}, nil
					case foreign.MariaDB:
						db := mariadbtest.Database(t)
						return foreign.DB{Service: db.DSN, Oracle: db.URL}, func() {}, nil
					}
					return foreign.DB{}, nil, fmt.Errorf("no %s database here", kind)
				}}
			results, err := e.Run(ctx, c, seeds, nil)
			if err != nil {
				table = append(table, fmt.Sprintf("%-30s %-5s %-20s error: %s", c.Name, c.Class, expectName(c), firstLine(err.Error())))
				if why, known := foreign.KnownMiss[c.Name]; known {
					t.Logf("known miss (%s): %v", why, err)
					return
				}
				t.Fatal(err)
			}
			right := 0
			var got []string
			for _, r := range results {
				got = append(got, fmt.Sprintf("%s%v", r.Verdict, r.Violated))
				checkClicks(t, c, r)
				checkAgrees(t, cli, r)
				checkMade(t, c, r)
				if c.Right(r.Verdict) {
					right++
					if !c.Correct() && c.Setup == "" {
						t.Logf("seed %d: caught: %s", r.Seed, firstLineWith(r.Detail, c.Expect+":"))
					}
					continue
				}
				report := t.Errorf
				if _, known := foreign.KnownMiss[c.Name]; known {
					report = t.Logf
				}
				report("seed %d: %s (want %s), %d requests, history %s\n%s", r.Seed, r.Verdict, expectName(c), r.Requests, r.History, r.Detail)
			}
			table = append(table, fmt.Sprintf("%-30s %-5s %-20s %s", c.Name, c.Class, expectName(c), strings.Join(got, " ")))
			if why, known := foreign.KnownMiss[c.Name]; known {
				if right == len(results) {
					// Some gaps show only at some runs (real concurrency): a
					// known miss judged right is reported, not failed.
					t.Logf("KNOWN MISS JUDGED RIGHT at every seed this time: if it stays so, remove %q from foreign.KnownMiss (%s)", c.Name, why)
				} else {
					t.Logf("known miss: %s", why)
				}
			}
		})
	}
	t.Logf("case                           class expected             verdict per seed\n%s", strings.Join(table, "\n"))
}

// raced lists the classes whose flaw only copies racing inside the
// service provoke (a check-then-act, a claim recorded late): a seed whose
// plan has no double click would be a miss that says nothing of the
// checkers.
var raced = map[string]bool{"c": true, "j": true, "k": true, "m": true}

// checkClicks asserts that the run's double clicks raced: every one was
// sent together, so its original and copies were all in flight at once
// (invoked before any was answered); that a class in [raced] had one; and,
// for the duplicate-key 500, that the flaw was provoked (a copy got 500).
// A verdict alone would not tell a race that was never run from a service
// that survived it.
func checkClicks(t *testing.T, c foreign.Case, r foreign.SeedResult) {
	t.Helper()
	if r.History == "" {
		return
	}
	k, err := foreign.ReadClicks(r.History)
	if err != nil {
		t.Errorf("seed %d: %v", r.Seed, err)
		return
	}
	t.Logf("seed %d: %d double clicks, %d all in flight at once, %d with a 500", r.Seed, k.Clicks, k.Overlapped, k.Got500)
	if k.Overlapped != k.Clicks {
		t.Errorf("seed %d: %d of %d double clicks were not all in flight at once (history %s)", r.Seed, k.Clicks-k.Overlapped, k.Clicks, r.History)
	}
	if raced[c.Class] && k.Clicks == 0 {
		t.Errorf("seed %d: the plan sent no double click: the race class %s's flaw needs was never run (history %s)", r.Seed, c.Class, r.History)
	}
	if c.Class == "c" && k.Got500 == 0 {
		t.Errorf("seed %d: no copy of %d double clicks got 500: the duplicate-key race was not provoked (history %s)", r.Seed, k.Clicks, r.History)
	}
}

// checkMade asserts, for a service that lists what it made, that the
// duplicates reported are the ones it really made: none for a correct
// service, and for a flawed one every extra order, the late ones included.
func checkMade(t *testing.T, c foreign.Case, r foreign.SeedResult) {
	t.Helper()
	if c.Listing == "" || r.History == "" {
		return
	}
	t.Logf("seed %d: the service made %d orders for %d keys; %d duplicates reported", r.Seed, r.Made, r.Keys, r.Reported)
	if r.Reported != r.Made-r.Keys {
		t.Errorf("seed %d: %d duplicates reported, the service made %d (%d orders for %d keys; history %s)", r.Seed, r.Reported, r.Made-r.Keys, r.Made, r.Keys, r.History)
	}
	if c.Correct() && r.Made != r.Keys {
		t.Errorf("seed %d: a correct service made %d orders for %d keys", r.Seed, r.Made, r.Keys)
	}
}

func expectName(c foreign.Case) string {
	switch {
	case c.Setup != "":
		return "setup: " + c.Setup
	case c.Correct():
		return "clean"
	}
	return c.Expect
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func firstLineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// buildCLI builds the idemchaos command, whose check judges the runs'
// histories offline.
func buildCLI(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idemchaos")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/idemchaos")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build idemchaos: %v\n%s", err, out)
	}
	return bin
}

// checkAgrees asserts the one verdict: idemchaos check of the run's
// history gives the verdict and exit code the run itself got.
func checkAgrees(t *testing.T, cli string, r foreign.SeedResult) {
	t.Helper()
	if r.History == "" {
		return
	}
	want := 1
	switch {
	case r.RunVerdict == checkers.EnvironmentError:
		want = 3
	case r.RunMet:
		want = 0
	case r.RunVerdict == checkers.Unknown:
		want = 2
	}
	out, err := exec.CommandContext(t.Context(), cli, "check", "--json", r.History).Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("check %s: %v", r.History, err)
	}
	var rep struct {
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || code != want || rep.Verdict != r.RunVerdict.String() {
		t.Errorf("seed %d: the run got %s (exit %d); check of its history %s gives %s (exit %d, %v)", r.Seed, r.RunVerdict, want, r.History, rep.Verdict, code, err)
	}
}
