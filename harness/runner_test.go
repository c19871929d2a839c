package harness_test

import (
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
)

// A run in which nothing succeeded (a wrong path here) judged nothing: it is
// inconclusive, never a clean pass.
func TestRun_NothingSucceededIsInconclusive(t *testing.T) {
	o := run(t, `target: {reference: {}}
endpoint: {path: /orders}
traffic: {intents: 3}`, "")
	st := o.Steps[0]
	if st.Result.Verdict != checkers.Unknown || o.Met() || !strings.Contains(st.Result.Reason, "3× 404") {
		t.Fatalf("verdict %s, met %v, reason %q: want unknown, not met, naming the 404s", st.Result.Verdict, o.Met(), st.Result.Reason)
	}
}
