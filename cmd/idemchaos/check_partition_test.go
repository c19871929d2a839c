package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	cases := map[string]struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		"one of two":    {[]string{"check", "--partition", "1/2", clean}, 0, "PASS", ""},
		"bad partition": {[]string{"check", "--partition", "2/2", clean}, 3, "", `--partition "2/2"`},
		"disagree":      {[]string{"check", "--partition", "0/2", "--partitions", "3", clean}, 3, "", "disagree"},
		"malformed":     {[]string{"check", "--partitions", "4", malformed}, 3, "", "malformed.jsonl:3: \"op\" must be an integer, got string"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runMain(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
		})
	}
}
