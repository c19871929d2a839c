package scenarios_test

import (
	"errors"
	"testing"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/scenarios"
)

func TestErrors_UnwrapsCauses(t *testing.T) {
	t.Parallel()
	_, err := scenarios.Parse("x.yaml", []byte("target: {reference: {}}\nfaults: [{kind: double-click, params: {copies: 1}}]\n"))
	var e scenarios.Error
	if !errors.Is(err, faults.ErrInvalidParams) || !errors.As(err, &e) || e.Line != 2 || e.File != "x.yaml" {
		t.Errorf("err = %v; want a positioned error wrapping faults.ErrInvalidParams", err)
	}
}

func TestErrors_SortedByPosition(t *testing.T) {
	t.Parallel()
	// Schema problems (line 4, line 2) and a semantic one (line 3) come out
	// in file order, whichever layer found them first.
	_, err := scenarios.Parse("x.yaml", []byte("target: {reference: {}}\ntraffic: {intents: x}\ninvariants: [exactly-once, exactly-once]\nhooks: {kil: x}\n"))
	var errs *scenarios.Errors
	if !errors.As(err, &errs) || len(errs.List) != 3 {
		t.Fatalf("err = %v", err)
	}
	for i, want := range []int{2, 3, 4} {
		if errs.List[i].Line != want {
			t.Errorf("error %d on line %d, want %d: %v", i, errs.List[i].Line, want, errs.List[i])
		}
	}
}
