package scenarios_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/scenarios"
)

var update = flag.Bool("update", false, "rewrite testdata/bad-yaml/*.want from the loader's output")

// TestParse_BadYAML walks testdata/bad-yaml: each NAME.yaml must fail with
// exactly the "file:line:col: message" lines of NAME.want.
func TestParse_BadYAML(t *testing.T) {
	files, err := filepath.Glob("../testdata/bad-yaml/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in ../testdata/bad-yaml (%v)", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data := readFile(t, file)
			s, err := scenarios.Parse(filepath.Base(file), data)
			if err == nil {
				t.Fatalf("Parse accepted a bad file: %+v", s)
			}
			var errs *scenarios.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want *scenarios.Errors: %v", err, err)
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false")
			}
			got := err.Error() + "\n"
			wantFile := strings.TrimSuffix(file, ".yaml") + ".want"
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := string(readFile(t, wantFile)); got != want {
				t.Errorf("errors differ (run with -update to accept)\n--- got\n%s--- want\n%s", got, want)
			}
		})
	}
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
