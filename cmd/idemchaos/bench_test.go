package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBench_UnknownSectionIsAUsageError(t *testing.T) {
	code, _, stderr := runMain(t, "bench", "--only", "speed")
	if code != ExitUsage || !strings.Contains(stderr, `unknown bench section "speed"`) {
		t.Fatalf("exit %d, stderr %q; want %d and the unknown section named", code, stderr, ExitUsage)
	}
}

// One real section, end to end: the report is written where --out says,
// with the machine and the section's table.
func TestBench_WritesTheReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	code, stdout, stderr := runMain(t, "bench", "--only", "startup", "--startup-repeats", "1", "--out", out)
	if code != ExitClean {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "wrote "+out) || !strings.Contains(stderr, "bench: startup: done") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Machine", "| cores |", "## Environment start-up", "| primary + streaming standby |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
