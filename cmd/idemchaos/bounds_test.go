package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The small gaps of issue #22: each command line below was accepted (exit
// 0, or a run that failed after its traffic); each is now refused up
// front, exit 3, in one line, before anything starts.
func TestSmallGaps_RefusedUpFront(t *testing.T) {
	t.Parallel()
	const s = "../../scenarios/key-reuse.yaml"
	const h = "../../testdata/histories/in-flight-conflict/duplicate-got-500-bad.jsonl"
	runCLICases(t, map[string]cliCase{
		"reference typo":   {args: []string{"reference", "bogus"}, code: 3, stderr: `unknown command "bogus" for "idemchaos reference"`},
		"completion typo":  {args: []string{"completion", "badshell"}, code: 3, stderr: `unknown command "badshell" for "idemchaos completion"`},
		"images typo":      {args: []string{"images", "bogus"}, code: 3, stderr: `unknown command "bogus" for "idemchaos images"`},
		"reruns negative":  {args: []string{"run", "--reruns", "-1", "-s", s}, code: 3, stderr: "--reruns -1"},
		"headers with :":   {args: []string{"run", "--headers", "Location: x", "-s", s}, code: 3, stderr: "not a header name"},
		"check headers":    {args: []string{"check", "--headers", "a b", h}, code: 3, stderr: "not a header name"},
		"ignore malformed": {args: []string{"check", "--replay-ignore", "Date,Set Cookie", h}, code: 3, stderr: "not a header name"},
		"junit in /proc":   {args: []string{"run", "--junit", "/proc/self/status", "-s", s}, code: 3, stderr: "kernel interface"},
		"history in /sys":  {args: []string{"run", "--history", "/sys/kernel/x.jsonl", "-s", s}, code: 3, stderr: "kernel interface"},
	})
	// Bare, a group command still prints its help, and a real subcommand
	// still runs.
	runCLICases(t, map[string]cliCase{
		"reference bare": {args: []string{"reference"}, code: 0, stdout: "serve"},
		"headers good":   {args: []string{"check", "--headers", "Location, X-Request-Id", h}, code: 1},
	})
}

// An OpenAPI path key holding a newline made init write scenario files that
// do not load, then blame itself ("a bug in init"); it is now refused with
// the path named, and nothing is written.
func TestInit_PathWithNewlineWritesNothing(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../testdata/openapi/stripe-like.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "\n  /v1/charges:\n", "\n  \"/v1/char\\nges\":\n", 1)
	if doc == string(b) {
		t.Fatal("the document has no /v1/charges path to break")
	}
	dir := t.TempDir()
	in := writeFile(t, dir, "nl.yaml", doc)
	out := filepath.Join(dir, "out")
	code, _, errs := runMain(t, "init", "--openapi", in, "--out", out)
	if code != 3 || !strings.Contains(errs, `path "/v1/char\nges" has a control character`) || strings.Contains(errs, "a bug in init") {
		t.Fatalf("init: exit %d, want 3 naming the path\n%s", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("init left %s behind (%v)", out, err)
	}
}
