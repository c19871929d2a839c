package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// Crafted reports and counts that took merge and check out of memory (13 GB
// for a 10 KB pair of shard reports; an 800 GB table for --partition
// 1/99999999999), or merged a verdict no check gave ("banana" merged to
// pass, exit_code 1): each is refused, exit 3, within a few MB.
func TestMerge_CraftedReportsRefused(t *testing.T) {
	// Not parallel: it measures what it allocates.
	dir := t.TempDir()
	h := "../../testdata/histories/in-flight-conflict/duplicate-got-500-bad.jsonl"
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
	}
	scen, _ := json.Marshal(names)
	huge := writeFile(t, dir, "huge.json", `{"tool":"idemchaos","version":1,"verdict":"pass","exit_code":0,"runs":[],
		"shard":{"index":1,"total":1,"scenarios":`+string(scen)+`,"seeds":"1-1000000","pairs":0}}`)
	many := writeFile(t, dir, "many.json", `{"tool":"idemchaos","version":1,"verdict":"pass","exit_code":0,"runs":[],
		"shard":{"index":1,"total":99999999999,"scenarios":["a"],"seeds":"1","pairs":0}}`)
	banana := writeFile(t, dir, "banana.json", `{"tool":"idemchaos","version":1,"verdict":"pass","exit_code":0,
		"runs":[{"scenario":"a","seed":1,"verdict":"banana","met":true,"steps":[]}],
		"shard":{"index":1,"total":1,"scenarios":["a"],"seeds":"1","pairs":1}}`)
	code, out, errs := runMain(t, "check", "--partition", "0/2", "--json", h)
	if code != 1 {
		t.Fatalf("check --partition 0/2: exit %d\n%s", code, errs)
	}
	var share map[string]any
	if err := json.Unmarshal([]byte(out), &share); err != nil {
		t.Fatal(err)
	}
	share["partitions"].([]any)[0].(map[string]any)["total"] = 99999999999
	b, _ := json.Marshal(share)
	total := writeFile(t, dir, "total.json", string(b))
	share["partitions"].([]any)[0].(map[string]any)["total"] = 2
	share["runs"].([]any)[0].(map[string]any)["verdict"] = "banana"
	b, _ = json.Marshal(share)
	bananaShare := writeFile(t, dir, "banana-share.json", string(b))
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"10k scenarios × 1M seeds":  {[]string{"merge", huge}, "10000 scenarios × 1000000 seeds is more than 10000000 runs"},
		"99999999999 shards":        {[]string{"merge", many}, "99999999999 shards: want 1 to 10000"},
		"verdict banana":            {[]string{"merge", banana}, `run 1 (a seed 1): verdict "banana" is not one of`},
		"partition total":           {[]string{"merge", total}, "… (99999999998 missing in all)"},
		"partition banana":          {[]string{"merge", bananaShare}, `verdict "banana" is not one of`},
		"--partition 1/99999999999": {[]string{"check", "--partition", "1/99999999999", h}, "99999999999 partitions, want at most 1024"},
		"--partitions 99999999999":  {[]string{"check", "--partitions", "99999999", h}, "--partitions 99999999: want 0 (automatic), 1 (in memory) or up to 1024"},
	} {
		t.Run(name, func(t *testing.T) {
			var code int
			var errs string
			n := allocated(func() { code, _, errs = runMain(t, c.args...) })
			if code != 3 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, want 3 with %q\n%s", code, c.want, errs)
			}
			if n > 64<<20 {
				t.Errorf("allocated %d MB", n>>20)
			}
		})
	}
}

// allocated runs f and returns the bytes it allocated (in this process,
// parallel tests included: a bound, not a measure).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
