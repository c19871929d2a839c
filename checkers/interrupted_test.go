package checkers_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
)

// A history whose run was interrupted is partial: every checker says
// unknown, naming the interruption, even where the same history without
// the marker is a violation (and the marker is what makes the difference).
func TestInterrupted_NeverAViolation(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*-bad.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no violating golden histories: %v", err)
	}
	for _, file := range files {
		invariant := filepath.Base(filepath.Dir(file))
		t.Run(invariant+"/"+filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			opts, keep := readOpts(t, strings.TrimSuffix(file, ".jsonl")+".opts")
			opts = append([]checkers.Option{checkers.WithContract(metaContract(t, file))}, opts...)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(b, []byte("\n")) {
				t.Skip("a truncated history: no line can follow its cut")
			}
			if h := loadBytes(t, b, keep); suiteOf(t, h, opts).Check(h, h.Effects).Verdict != checkers.Violated {
				t.Fatal("without the marker: no violation, want one")
			}
			b = append(b, `{"type":"interrupted","ns":999999999999,"error":"interrupt signal received"}`+"\n"...)
			h := loadBytes(t, b, keep)
			if h.Interrupted != "interrupt signal received" {
				t.Fatalf("Interrupted = %q", h.Interrupted)
			}
			r := suiteOf(t, h, opts).Check(h, h.Effects)
			for _, p := range r.Results {
				if p.Verdict != checkers.Unknown || !strings.Contains(p.Reason, "interrupted") || len(p.Violations) != 0 {
					t.Errorf("%s: %s (%q, %d violations), want unknown because interrupted", p.Name, p.Verdict, p.Reason, len(p.Violations))
				}
			}
		})
	}
}

func loadBytes(t *testing.T, b []byte, keep []string) *history.History {
	t.Helper()
	// Every header is kept, as in the golden test: the contract decides.
	h, err := history.Load(bytes.NewReader(b), history.LoadOptions{KeepHeaders: keep, KeepHeader: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// metaContract is the contract a golden history's meta event carries.
func metaContract(t *testing.T, file string) checkers.Contract {
	t.Helper()
	h := loadGolden(t, file, nil)
	c, err := checkers.ContractFromMeta(h.Meta.Contract)
	if err != nil {
		t.Fatalf("meta contract: %v", err)
	}
	return c
}
