package bench_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/bench"
)

// The acceptance test of the whole suite, and the gate `idemchaos bench
// --quick` runs: every mutant is caught by the bundled suite at each of 3
// seeds; at the first seed every bundled scenario is clean on the correct
// reference; and the correct reference stays clean (no violation, no
// inconclusive verdict) through 10 seeds of storm.
func TestQuick_EveryMutantCaughtReferenceClean(t *testing.T) {
	// Histories outlive a failing test, so the paths in its message open.
	dir, err := os.MkdirTemp("", "idemchaos-quick-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("histories kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	rep, err := bench.Quick(t.Context(), bench.Options{HistoryDir: dir, Progress: testWriter{t}})
	if rep != nil {
		var md bytes.Buffer
		if merr := rep.Markdown(&md); merr != nil {
			t.Error(merr)
		}
		t.Logf("\n%s", md.String())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// testWriter sends progress lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
