package scenarios_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/idemchaos/idemchaos/scenarios"
)

// FuzzParse: Parse never panics; it either returns a scenario whose every
// fault builds and that has at least one step, or an *Errors whose every
// entry has a real position. Seeds: the examples, the bad-YAML fixtures
// and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"examples/*.yaml", "../testdata/bad-yaml/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			f.Add(readFile(f, file))
		}
	}
	f.Add([]byte("target: {reference: {}}\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n"))
	f.Add([]byte("target: !!str 3\n"))
	f.Add([]byte("? [a]\n: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenarios.Parse("fuzz.yaml", data)
		if err != nil {
			var errs *scenarios.Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("error %T %v is not a non-empty *Errors", err, err)
			}
			for _, e := range errs.List {
				if e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Fatalf("error without a position or message: %+v", e)
				}
			}
			return
		}
		steps := s.EffectiveSteps()
		if len(steps) == 0 {
			t.Fatal("a valid scenario has no steps")
		}
		for _, st := range steps {
			if st.Traffic == nil {
				t.Fatalf("step %s has no traffic", st.Name)
			}
			for _, fs := range st.Faults {
				if _, err := fs.Build(); err != nil {
					t.Fatalf("a loaded fault does not build: %v", err)
				}
			}
		}
		if _, err := s.Checker(); err != nil {
			t.Fatalf("a loaded scenario has no checker: %v", err)
		}
	})
}
