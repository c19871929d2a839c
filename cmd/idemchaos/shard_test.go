package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemchaos/idemchaos/report"
)

// runCLI runs the built idemchaos with args in dir and returns its exit
// code, stdout and stderr.
func runCLI(t *testing.T, bin, dir string, env []string, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.Bytes(), errb.String()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return 0, out.Bytes(), errb.String()
}

func decodeReport(t *testing.T, b []byte) report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, b)
	}
	return r
}

// pairVerdicts maps "scenario@seed" to the run's verdict.
func pairVerdicts(r report.Report) map[string]string {
	out := map[string]string{}
	for _, run := range r.Runs {
		out[fmt.Sprintf("%s@%d", run.Scenario, run.Seed)] = run.Verdict
	}
	return out
}

// Three real shard processes, run at once, then merged, give the verdicts
// and exit code of one process running every pair; a merge missing a
// shard is an error, not a pass.
func TestShard_MergeEqualsUnsharded(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	env := []string{"TMPDIR=" + t.TempDir()}
	// key-reuse catches the mutant on every seed; response-drop-replay
	// does not exercise it: the merge must keep both kinds of verdict.
	common := []string{"run", "-s", "../../scenarios/key-reuse.yaml", "-s", "../../scenarios/response-drop-replay.yaml",
		"--seeds", "1-3", "--mutant", "no-fingerprint", "--reruns", "0", "--shrink=false", "--json"}
	wd, _ := os.Getwd()
	const n = 3
	var wg sync.WaitGroup
	codes := make([]int, n+1)
	outs := make([][]byte, n+1)
	errs := make([]string, n+1)
	for i := 0; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{}, common...)
			if i > 0 {
				args = append(args, "--shard", fmt.Sprintf("%d/%d", i, n), "--history", filepath.Join(dir, "histories"))
			}
			codes[i], outs[i], errs[i] = runCLI(t, bin, wd, env, args...)
		}()
	}
	wg.Wait()
	for i := range outs {
		if len(outs[i]) == 0 {
			t.Fatalf("process %d (0: unsharded) printed no report: exit %d\n%s", i, codes[i], errs[i])
		}
	}
	whole := decodeReport(t, outs[0])
	if codes[0] != ExitViolation || len(whole.Runs) != 6 {
		t.Fatalf("unsharded: exit %d, %d runs; want 1, 6\n%s", codes[0], len(whole.Runs), errs[0])
	}
	var files []string
	for i := 1; i <= n; i++ {
		r := decodeReport(t, outs[i])
		if r.Shard == nil || r.Shard.Index != i || r.Shard.Total != n || r.Shard.Pairs != 2 || len(r.Runs) != 2 {
			t.Fatalf("shard %d: exit %d, shard %+v, %d runs\n%s", i, codes[i], r.Shard, len(r.Runs), errs[i])
		}
		f := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		if err := os.WriteFile(f, outs[i], 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	xmlPath, htmlPath := filepath.Join(dir, "merged.xml"), filepath.Join(dir, "merged.html")
	code, out, stderr := runCLI(t, bin, wd, env, append([]string{"merge", "--json", "--junit", xmlPath, "--report", htmlPath,
		"--histories", filepath.Join(dir, "histories")}, files...)...)
	merged := decodeReport(t, out)
	if code != codes[0] || merged.ExitCode != whole.ExitCode || merged.Verdict != whole.Verdict {
		t.Errorf("merge: exit %d verdict %s; unsharded: exit %d verdict %s\n%s", code, merged.Verdict, codes[0], whole.Verdict, stderr)
	}
	want, got := pairVerdicts(whole), pairVerdicts(merged)
	if len(got) != len(want) {
		t.Errorf("merged pairs %v, unsharded %v", got, want)
	}
	caught := 0
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: merged %q, unsharded %q", p, got[p], v)
		}
		if v == "violation" {
			caught++
		}
	}
	if caught != 3 {
		t.Errorf("unsharded caught %d pairs, want the 3 key-reuse ones: %v", caught, want)
	}
	failures := 0
	for _, s := range readJUnit(t, xmlPath).Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failures++
				if c.Name != "reuse-rejected" {
					t.Errorf("JUnit failure in %s: %s", c.Name, c.Failure.Message)
				}
			}
		}
	}
	if failures != 3 {
		t.Errorf("merged JUnit: %d failures, want 3 (reuse-rejected × 3 seeds)", failures)
	}
	// The catch summary draws the violating keys' timelines from the histories.
	if b, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(b), "reuse-rejected") || !strings.Contains(string(b), "<svg") {
		t.Errorf("merged HTML: %v, no violation timeline", err)
	}

	code, _, stderr = runCLI(t, bin, wd, env, "merge", files[0], files[2])
	if code != ExitUsage || !strings.Contains(stderr, "shard 2/3 missing") {
		t.Errorf("merge without shard 2: exit %d, %q; want 3 naming the missing shard", code, stderr)
	}
}

// Bad shard and seed flags are usage errors before anything starts
// (internal/shard tests the parsing and the variables of each engine).
func TestShard_Usage(t *testing.T) {
	t.Parallel()
	m := func(env map[string]string) *Main {
		mm := NewMain()
		mm.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		return mm
	}
	var out, errb bytes.Buffer
	mm := m(map[string]string{"JOB_COMPLETION_INDEX": "1", "IDEMCHAOS_SHARD_TOTAL": "2"})
	mm.Stdout, mm.Stderr = &out, &errb
	code := mm.Exit(mm.Run(t.Context(), []string{"run", "-s", "../../scenarios/key-reuse.yaml", "--seeds", "1-3", "--shard", "auto", "--plan", "x.json"}))
	if code != ExitUsage || !strings.Contains(errb.String(), "--plan") {
		t.Errorf("--shard with --plan: exit %d, %q", code, errb.String())
	}
	for _, args := range [][]string{
		{"--seeds", "3-1"}, {"--shard", "5/4"}, {"--shard", "auto"}, {"--seed", "2", "--seeds", "1-2"},
	} {
		code, _, stderr := runMain(t, append([]string{"run", "-s", "../../scenarios/key-reuse.yaml"}, args...)...)
		if code != ExitUsage || !strings.Contains(stderr, "idemchaos: ") {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, stderr)
		}
	}
}
