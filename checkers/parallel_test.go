package checkers_test

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

// TestAll_SideBySideMatchesSeries checks that the seven checks run on
// several goroutines give exactly the result they give one after another
// (parts, violations, order, reasons and the tallies a merge reads), on
// every golden history, violations included, and on a generated one.
func TestAll_SideBySideMatchesSeries(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden histories: %v", err)
	}
	type input struct {
		h    *history.History
		opts []checkers.Option
	}
	inputs := map[string]input{}
	for _, file := range files {
		h := loadGolden(t, file, nil)
		contract, err := checkers.ContractFromMeta(h.Meta.Contract)
		if err != nil {
			t.Fatalf("%s: meta contract: %v", file, err)
		}
		opts, _ := readOpts(t, strings.TrimSuffix(file, ".jsonl")+".opts")
		inputs[file] = input{h, append([]checkers.Option{checkers.WithContract(contract)}, opts...)}
	}
	gen, err := history.Load(bytes.NewReader(histgen.Generate(histgen.Default(20000))), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inputs["generated"] = input{h: gen}
	violated := 0
	for name, in := range inputs {
		c := checkers.Default(in.opts...)
		want := checkers.CheckOn(c, in.h, 1)
		if want.Verdict == checkers.Violated {
			violated++
		}
		for _, workers := range []int{2, 3, 7} {
			if got := checkers.CheckOn(c, in.h, workers); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %d goroutines:\n%v\nin series:\n%v", name, workers, got.Failures(), want.Failures())
			}
		}
	}
	if violated == 0 {
		t.Fatal("no history with a violation: the comparison would miss a difference in violations")
	}
}
