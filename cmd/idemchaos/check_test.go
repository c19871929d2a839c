package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck_ExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	malformed := filepath.Join(dir, "malformed.jsonl")
	os.WriteFile(malformed, []byte(`{"type":"meta","v":1}`+"\n"+`{"type":"ok","op":"7"}`+"\n"), 0o644)
	runCLICases(t, map[string]cliCase{
		"clean":         {[]string{"check", "../../testdata/examples/response-drop-clean.jsonl"}, 0, "PASS", ""},
		"violation":     {[]string{"check", "../../testdata/examples/response-drop-duplicate.jsonl"}, 1, "produced 2 order effects", ""},
		"inconclusive":  {[]string{"check", "../../testdata/histories/exactly-once/no-effects-recorded-unknown.jsonl"}, 2, "UNKNOWN", ""},
		"malformed":     {[]string{"check", malformed}, 3, "", "malformed.jsonl:2: \"op\" must be an integer, got string"},
		"missing file":  {[]string{"check", filepath.Join(dir, "nope.jsonl")}, 3, "", "no such file"},
		"no file":       {[]string{"check"}, 3, "", "requires at least 1 arg"},
		"bad invariant": {[]string{"check", "--invariant", "exactly-one", "../../testdata/examples/response-drop-clean.jsonl"}, 3, "", `unknown invariant "exactly-one"`},
		"bad profile":   {[]string{"check", "--profile", "paypal", "../../testdata/examples/response-drop-clean.jsonl"}, 3, "", "unknown contract profile"},
		"one invariant": {[]string{"check", "--invariant", "replay-identical", "../../testdata/examples/response-drop-duplicate.jsonl"}, 0, "replay-identical", ""},
		"worst verdict": {[]string{"check", "../../testdata/examples/response-drop-clean.jsonl", "../../testdata/examples/response-drop-duplicate.jsonl"}, 1, "PASS", ""},
	})
}

// cliCase is one command line and what it must do: exit with code and
// print stdout and stderr (substrings; "" matches anything).
type cliCase struct {
	args   []string
	code   int
	stdout string
	stderr string
}

// runCLICases runs each case through [Main] in parallel. An input error
// (exit 3) must also be one line.
func runCLICases(t *testing.T, cases map[string]cliCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runMain(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			if tc.code == 3 && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Fatalf("an input error must be one line, got:\n%s", errs)
			}
		})
	}
}

func TestCheck_JSON(t *testing.T) {
	t.Parallel()
	code, out, _ := runMain(t, "check", "--json", "../../testdata/examples/response-drop-duplicate.jsonl")
	var rep struct {
		Tool     string `json:"tool"`
		Verdict  string `json:"verdict"`
		ExitCode int    `json:"exit_code"`
		Runs     []struct {
			File  string `json:"file"`
			Steps []struct {
				Invariants []struct {
					Name       string `json:"name"`
					Verdict    string `json:"verdict"`
					Violations []struct {
						Key         string  `json:"key"`
						Ops         []int64 `json:"ops"`
						Explanation string  `json:"explanation"`
					} `json:"violations"`
				} `json:"invariants"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || rep.Tool != "idemchaos" || rep.Verdict != "violation" || rep.ExitCode != 1 || len(rep.Runs) != 1 {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
	iv := rep.Runs[0].Steps[0].Invariants[0]
	if iv.Name != "exactly-once" || iv.Verdict != "violation" || iv.Violations[0].Key != "k-1" || len(iv.Violations[0].Ops) != 2 {
		t.Fatalf("first invariant %+v", iv)
	}
}

func TestMain_ExitErrorCarriesItsCode(t *testing.T) {
	t.Parallel()
	m := &Main{Stderr: &bytes.Buffer{}}
	if got := m.Exit(&ExitError{Code: 2}); got != 2 {
		t.Fatalf("Exit = %d", got)
	}
	if got := m.Exit(errors.New("plain")); got != ExitUsage {
		t.Fatalf("a plain error exits %d, want %d", got, ExitUsage)
	}
}

// The contract a history's meta carries is the one check judges by; the
// contract flags override it field by field, and a custom contract is set
// with flags alone.
func TestCheck_Contract(t *testing.T) {
	t.Parallel()
	const h = "../../testdata/histories/"
	runCLICases(t, map[string]cliCase{
		"meta canonical":        {[]string{"check", h + "replay-identical/canonical-reordered-replayed-ok.jsonl"}, 0, "PASS", ""},
		"flag strict overrides": {[]string{"check", "--fingerprint", "strict", h + "replay-identical/canonical-reordered-replayed-ok.jsonl"}, 1, "contract says strict", ""},
		"ietf by default":       {[]string{"check", h + "reuse-rejected/stripe-reuse-422-bad.jsonl"}, 0, "PASS", ""},
		"stripe by flag":        {[]string{"check", "--profile", "stripe", h + "reuse-rejected/stripe-reuse-422-bad.jsonl"}, 1, "the stripe contract says 400", ""},
		"custom by flags":       {[]string{"check", "--reuse", "400", "--in-flight", "409", "--missing-key", "0", h + "reuse-rejected/stripe-reuse-422-bad.jsonl"}, 1, "the custom contract says 400", ""},
		"custom needs codes":    {[]string{"check", "--profile", "custom", h + "reuse-rejected/stripe-reuse-400-ok.jsonl"}, 3, "", "needs --reuse and --in-flight"},
		"codes need custom":     {[]string{"check", "--profile", "stripe", "--reuse", "400", h + "reuse-rejected/stripe-reuse-400-ok.jsonl"}, 3, "", "use --profile custom"},
		"bad fingerprint":       {[]string{"check", "--fingerprint", "fuzzy", h + "reuse-rejected/stripe-reuse-400-ok.jsonl"}, 3, "", `fingerprint "fuzzy"`},
		"budget runs out":       {[]string{"check", "--max-time", "1ns", "../../testdata/examples/response-drop-clean.jsonl"}, 2, "time budget (--max-time 1ns) ran out", ""},
		"headers only listed":   {[]string{"check", "--headers", "Content-Type", h + "replay-identical/location-dropped-by-default-bad.jsonl"}, 0, "PASS", ""},
		"headers by default":    {[]string{"check", h + "replay-identical/location-dropped-by-default-bad.jsonl"}, 1, "no Location header", ""},
	})
}

// A client run's history is judged offline like any other, by the client
// invariants its meta's mode names, in memory or cut by intent into
// partitions (check_partition_test.go compares the two).
func TestCheck_ClientHistory(t *testing.T) {
	t.Parallel()
	const dir = "../../testdata/histories/"
	runCLICases(t, map[string]cliCase{
		"client clean":       {[]string{"check", dir + "key-stable/client-lost-answer-same-key-ok.jsonl"}, 0, "truthful-outcome", ""},
		"client violation":   {[]string{"check", dir + "key-stable/client-new-key-per-retry-bad.jsonl"}, 1, "generated inside the retry loop", ""},
		"client injected":    {[]string{"check", dir + "no-retry-permanent/client-422-not-retried-ok.jsonl"}, 0, "PASS", ""},
		"client one":         {[]string{"check", "--invariant", "backoff", dir + "key-stable/client-new-key-per-retry-bad.jsonl"}, 0, "backoff", ""},
		"client partitioned": {[]string{"check", "--partitions", "2", dir + "key-stable/client-new-key-per-retry-bad.jsonl"}, 1, "keys of intent", ""},
	})
}
