package bench

import (
	"strings"
	"testing"
)

// The clients section reads the benchmarks' own lines, as go test prints
// them; a line that lacks a figure is an error naming what is missing.
func TestClientsParse(t *testing.T) {
	out := "goos: linux\n" +
		"BenchmarkClientPath/side-by-side-2         \t    4814\t    441465 ns/op\t        41.53 direct-us/op\t       103.1 proxied-us/op\t         2.299 ratio\t        68.29 toxiproxy-us/op\n" +
		"PASS\n"
	got, err := clientPathRound(out)
	if err != nil {
		t.Fatal(err)
	}
	if got != [4]float64{41.53, 103.1, 68.29, 2.299} {
		t.Errorf("clientPathRound = %v", got)
	}
	if _, err := clientPathRound(strings.Replace(out, "2.299 ratio", "", 1)); err == nil || !strings.Contains(err.Error(), "ratio") {
		t.Errorf("a line without its ratio: err = %v", err)
	}
	check := "BenchmarkLoadCheckClient/events=1000000-2   \t       3\t 690204471 ns/op\t 210.35 MB/s\t      1447 cpu-ns/event\t   1448831 events/s\n"
	m, c := checkRateLine.FindStringSubmatch(check), checkCPULine.FindStringSubmatch(check)
	if m == nil || c == nil || m[1] != "1000000" || m[2] != "1448831" || c[1] != "1447" {
		t.Errorf("check line: rate %q, cpu %q", m, c)
	}
}
