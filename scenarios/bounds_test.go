package scenarios_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/scenarios"
)

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Inputs that validated, or were refused only after the parser had built
// their tree (issue #22): each is now refused at file:line:col from its
// bytes, allocating a small multiple of the file at most. On main, 200 KB
// of "[" allocated 8.8 GB and 200k flat keys took 97 s.
func TestParse_BoundedBeforeParsing(t *testing.T) {
	// Not parallel: it measures what it allocates.
	var flat strings.Builder
	flat.WriteString("target: {reference: {}}\nx:\n")
	for i := range 200_000 {
		fmt.Fprintf(&flat, "  k%d: 1\n", i)
	}
	var lines strings.Builder
	lines.WriteString("target: {reference: {}}\nx:\n")
	for i := range scenarios.MaxLines {
		fmt.Fprintf(&lines, "  k%d: 1\n", i)
	}
	for name, c := range map[string]struct {
		data string
		want string
	}{
		"200 KB of [":        {strings.Repeat("[", 200_000), "f.yaml:1:65: values are nested more than 64 levels deep"},
		"flow 65 deep":       {"target: {reference: {}}\nx: " + strings.Repeat("{a: ", 65) + "\n", "f.yaml:2:260: values are nested"},
		"compact dashes":     {strings.Repeat("- ", 100_000) + "x\n", "f.yaml:1:129: values are nested"},
		"200k flat keys":     {flat.String(), "f.yaml:1:1: the file is larger than 256 KiB"},
		"too many lines":     {lines.String(), fmt.Sprintf("f.yaml:%d:1: the file has more than %d lines", scenarios.MaxLines+1, scenarios.MaxLines)},
		"[ inside a quote":   {"target: {reference: {}}\nname: \"" + strings.Repeat("[", 100) + "\"\nx: [" + strings.Repeat("[", 100), "f.yaml:3:68: values are nested"},
		"quote in a plain":   {"target: {reference: {}}\nname: it's\nx: " + strings.Repeat("[", 100) + "\n", "f.yaml:3:68: values are nested"},
		"brackets commented": {"target: {reference: {}}\n# " + strings.Repeat("[", 100) + "\nname: [x\n", "YAML syntax error"},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = scenarios.Parse("f.yaml", []byte(c.data)) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v\nwant %q", err, c.want)
			}
			if limit := uint64(64<<20 + 20*len(c.data)); n > limit {
				t.Errorf("Parse allocated %d MB, want at most %d MB", n>>20, limit>>20)
			}
		})
	}
	// Brackets in quotes and comments are not nesting.
	ok := "target: {reference: {}}\nname: \"" + strings.Repeat("[", 100) + "\"\ndescription: '" + strings.Repeat("{", 100) + "'\n# " + strings.Repeat("[", 100) + "\n"
	if _, err := scenarios.Parse("ok.yaml", []byte(ok)); err != nil {
		t.Errorf("brackets in quotes and comments: %v", err)
	}
}

// validate /dev/zero read without bound; Load now reads one byte past
// MaxFileBytes and stops.
func TestLoad_DevZeroBounded(t *testing.T) {
	// Not parallel: it measures what it allocates.
	var err error
	n := allocated(func() { _, err = scenarios.Load("/dev/zero") })
	if err == nil || err.Error() != "/dev/zero:1:1: the file is larger than 256 KiB, the most a scenario file may be" {
		t.Fatalf("Load(/dev/zero): %v", err)
	}
	if n > 8<<20 {
		t.Errorf("Load(/dev/zero) allocated %d MB", n>>20)
	}
}

// timeout: 0s became 2s silently; a zero time limit is now refused.
// intents × copies bounded: a million intents of 100 copies passed
// validate, then grew the run to 15 GB.
func TestParse_CountsRefused(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ data, want string }{
		"timeout 0s":        {"target: {reference: {}}\ntraffic: {timeout: 0s}\n", "f.yaml:2:20: traffic.timeout: 0s is no time limit"},
		"step deadline 0":   {"target: {reference: {}}\nsteps:\n  - traffic: {deadline: \"0\"}\n", "f.yaml:3:25: steps[0].traffic.deadline: 0 is no time limit"},
		"intents x copies":  {"target: {reference: {}}\ntraffic: {intents: 100000, max_requests: 100000000}\nfaults:\n  - kind: double-click\n    params: {copies: 11}\n", "f.yaml:2:20: traffic: 100000 intents × 11 double-click copies is 1100000 planned requests, more than the 1000000"},
		"step's own clicks": {"target: {reference: {}}\ntraffic: {intents: 600000, max_requests: 100000000}\nsteps:\n  - faults: [{kind: double-click}]\n", "f.yaml:4:14: steps[0].traffic: 600000 intents × 2 double-click copies"},
		"copies":            {"target: {reference: {}}\nfaults:\n  - kind: double-click\n    params: {copies: 1000000000}\n", "copies must be ≤ 100"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := scenarios.Parse("f.yaml", []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v\nwant %q", err, c.want)
			}
		})
	}
	for _, ok := range []string{
		"target: {reference: {}}\ntraffic: {intents: 100000, max_requests: 100000000}\nfaults:\n  - kind: double-click\n    params: {copies: 10}\n",
		"target: {reference: {}}\ntraffic: {timeout: 1ms, deadline: 1s}\n",
	} {
		if _, err := scenarios.Parse("ok.yaml", []byte(ok)); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
}
