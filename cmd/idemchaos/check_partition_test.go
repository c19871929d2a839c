package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/internal/histgen"
)

// TestCheck_PartitionedSameReport runs check in memory and partitioned over
// histories with each verdict: the reports (exit code and JSON) must be
// the same, so that --partitions changes how, never what.
func TestCheck_PartitionedSameReport(t *testing.T) {
	t.Parallel()
	for _, file := range []string{
		"../../testdata/examples/response-drop-clean.jsonl",
		"../../testdata/examples/response-drop-duplicate.jsonl",
		"../../testdata/histories/exactly-once/no-effects-recorded-unknown.jsonl",
		"../../testdata/histories/tenant-isolation/binary-body-leak-bad.jsonl",
		// A consumer's history: its broker acks go with their keys.
		"../../testdata/histories/no-lost-message/ack-before-effect-bad.jsonl",
		"../../testdata/histories/no-lost-message/redelivered-applied-once-ok.jsonl",
		// Client runs' histories, cut by intent: what spans intents
		// (lockstep, the global budget, a key two intents share) is
		// judged at the merge; a re-keyed intent's keys are in the report.
		"../../testdata/histories/key-stable/client-new-key-per-retry-bad.jsonl",
		"../../testdata/histories/backoff/client-outage-lockstep-bad.jsonl",
		"../../testdata/histories/bounded/client-over-global-budget-bad.jsonl",
		"../../testdata/histories/key-per-intent/client-key-from-body-bad.jsonl",
		"../../testdata/histories/backoff/client-recorded-ordersdk-outage-ok.jsonl",
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(file); err != nil {
				t.Fatal(err)
			}
			wantCode, want, _ := runMain(t, "check", "--json", file)
			code, got, errs := runMain(t, "check", "--json", "--partitions", "3", file)
			if code != wantCode || got != want {
				t.Fatalf("partitioned: exit %d, want %d\n%s\nwant:\n%s\nstderr: %s", code, wantCode, got, want, errs)
			}
		})
	}
}

func TestCheck_PartitionFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.jsonl")
	os.WriteFile(malformed, []byte(`{"type":"meta","v":1}`+"\n"+`{"type":"invoke","op":1,"key":"a","ns":1}`+"\n"+`{"type":"ok","op":"7"}`+"\n"), 0o644)
	clean := "../../testdata/examples/response-drop-clean.jsonl"
	runCLICases(t, map[string]cliCase{
		"one of two":    {[]string{"check", "--partition", "1/2", clean}, 0, "PASS", ""},
		"bad partition": {[]string{"check", "--partition", "2/2", clean}, 3, "", `--partition "2/2"`},
		"disagree":      {[]string{"check", "--partition", "0/2", "--partitions", "3", clean}, 3, "", "disagree"},
		"malformed":     {[]string{"check", "--partitions", "4", malformed}, 3, "", "malformed.jsonl:3: \"op\" must be an integer, got string"},
	})
}

// shares runs check --partition i/n --json FILES for every i and writes each
// report to dir, returning the report files.
func shares(t *testing.T, dir string, n int, files ...string) []string {
	t.Helper()
	var out []string
	for i := range n {
		_, stdout, errs := runMain(t, append([]string{"check", "--json", "--partition", fmt.Sprintf("%d/%d", i, n)}, files...)...)
		if !strings.Contains(stdout, `"partitions"`) {
			t.Fatalf("partition %d/%d: no shares in the report\nstderr: %s", i, n, errs)
		}
		name := filepath.Join(dir, fmt.Sprintf("part-%d-of-%d.json", i, n))
		if err := os.WriteFile(name, []byte(stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	return out
}

// withoutMerged drops the "merged" field merge adds, the one difference
// allowed from check's report.
func withoutMerged(t *testing.T, s string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
	delete(m, "merged")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMerge_PartitionsSameAsCheck: the partitions of histories with each
// verdict, checked one by one as N machines would and merged, give check's
// report of the whole files: verdicts, counts, explanations, exit code.
func TestMerge_PartitionsSameAsCheck(t *testing.T) {
	t.Parallel()
	files := []string{
		"../../testdata/examples/response-drop-clean.jsonl",
		"../../testdata/examples/response-drop-duplicate.jsonl",
		"../../testdata/histories/exactly-once/no-effects-recorded-unknown.jsonl",
		"../../testdata/histories/tenant-isolation/binary-body-leak-bad.jsonl",
		"../../testdata/histories/exactly-once/body-hash-swallows-second-intent-bad.jsonl",
		"../../testdata/histories/key-stable/client-new-key-per-retry-bad.jsonl",
		"../../testdata/histories/backoff/client-recorded-retryablehttp-outage-bad.jsonl",
	}
	gen := filepath.Join(t.TempDir(), "generated.jsonl")
	if err := os.WriteFile(gen, histgen.Generate(histgen.Config{Events: 4000, DupRate: 0.3, IndetRate: 0.2, Seed: 5}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, group := range [][]string{{files[0]}, {files[1]}, {files[2]}, {files[3]}, {files[4]}, {files[5]}, {files[6]}, {gen}, files} {
		t.Run(filepath.Base(group[0])+fmt.Sprint(len(group)), func(t *testing.T) {
			t.Parallel()
			wantCode, want, _ := runMain(t, append([]string{"check", "--json"}, group...)...)
			for _, n := range []int{2, 5} {
				dir := t.TempDir()
				reps := shares(t, dir, n, group...)
				junit := filepath.Join(dir, "check.xml")
				code, got, errs := runMain(t, append([]string{"merge", "--json", "--junit", junit}, reps...)...)
				if code != wantCode || withoutMerged(t, got) != withoutMerged(t, want) {
					t.Fatalf("%d partitions merged: exit %d, want %d\n%s\nwant:\n%s\nstderr: %s", n, code, wantCode, got, want, errs)
				}
				if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<testsuite") {
					t.Fatalf("junit: %v\n%s", err, b)
				}
				code, text, _ := runMain(t, append([]string{"merge"}, reps...)...)
				if code != wantCode || !strings.Contains(text, fmt.Sprintf("merged %d partitions: %d histories", n, len(group))) {
					t.Fatalf("text merge: exit %d\n%s", code, text)
				}
			}
		})
	}
}

// TestMerge_PartitionsNotOneCheck: a missing or doubled partition, another
// count, another file, or shard reports mixed in are errors (exit 3).
func TestMerge_PartitionsNotOneCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clean := "../../testdata/examples/response-drop-clean.jsonl"
	dup := "../../testdata/examples/response-drop-duplicate.jsonl"
	two := shares(t, filepath.Join(dir), 2, clean)
	three := shares(t, t.TempDir(), 3, clean)
	other := shares(t, t.TempDir(), 2, dup)
	both := shares(t, t.TempDir(), 2, clean, dup)
	shard := filepath.Join(dir, "shard.json")
	if err := os.WriteFile(shard, []byte(`{"tool":"idemchaos","version":1,"runs":[],"shard":{"index":1,"total":1,"scenarios":["a"],"seeds":"1","pairs":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		files  []string
		stderr string
	}{
		"missing":      {two[:1], "partition 1/2 of ../../testdata/examples/response-drop-clean.jsonl missing"},
		"twice":        {[]string{two[0], two[1], two[1]}, "given twice"},
		"other count":  {[]string{two[0], three[1]}, "different counts"},
		"other file":   {[]string{two[0], other[1]}, "of another file"},
		"other files":  {[]string{two[0], both[1]}, "different checks"},
		"with a shard": {[]string{two[0], two[1], shard}, "of check --partition, the others not"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runMain(t, append([]string{"merge"}, tc.files...)...)
			if code != 3 || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d, want 3 with %q\nstdout:\n%s\nstderr:\n%s", code, tc.stderr, out, errs)
			}
		})
	}
}
