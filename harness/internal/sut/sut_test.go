package sut_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/harness/internal/sut"
)

func TestRegister_LookupAndNames(t *testing.T) {
	opened := false
	sut.Register("test-env", func(context.Context, sut.Config) (sut.Environment, error) {
		opened = true
		return nil, nil
	})
	open, ok := sut.Lookup("test-env")
	if !ok {
		t.Fatal("a registered environment is not found")
	}
	if _, err := open(context.Background(), sut.Config{}); err != nil || !opened {
		t.Fatalf("the opener found is not the one registered (opened %v, %v)", opened, err)
	}
	if _, ok := sut.Lookup("nowhere"); ok {
		t.Error("an environment nobody registered is found")
	}
	if !slices.Contains(sut.Names(), "test-env") || !slices.IsSorted(sut.Names()) {
		t.Errorf("Names() = %v, want it sorted and holding test-env", sut.Names())
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of one name did not panic")
		}
	}()
	sut.Register("test-env", func(context.Context, sut.Config) (sut.Environment, error) { return nil, nil })
}

func TestByToken_InvertsTheTokenMap(t *testing.T) {
	t.Parallel()
	got := sut.ByToken(map[string]string{"t1": "tok-a", "t2": "tok-b"})
	if len(got) != 2 || got["tok-a"] != "t1" || got["tok-b"] != "t2" {
		t.Errorf("ByToken = %v", got)
	}
}
