package faults_test

import (
	"slices"
	"testing"

	"github.com/idemchaos/idemchaos/faults"
)

func TestIsAimed_DecidedByTheKindAndItsWhen(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		f     faults.Fault
		picks bool
		want  bool
	}{
		"response-drop, default when":    {&faults.ResponseDrop{}, false, true},
		"double-click":                   {&faults.DoubleClick{}, true, true},
		"latency at a time":              {&faults.Latency{}, false, false},
		"latency on picked intents":      {&faults.Latency{}, true, true},
		"slow-db is only timed":          {&faults.SlowDB{}, true, false},
		"crash is only timed":            {&faults.Crash{}, false, false},
		"retention-expiry is only aimed": {&faults.RetentionExpiry{}, false, true},
	}
	for name, tc := range cases {
		if got := faults.IsAimed(tc.f, tc.picks); got != tc.want {
			t.Errorf("%s: IsAimed = %v, want %v", name, got, tc.want)
		}
	}
}

func TestNeeds_DeclaredByTheFault(t *testing.T) {
	t.Parallel()
	hooks := map[string]struct {
		f    faults.Fault
		want []string
	}{
		"crash":                     {&faults.Crash{}, []string{"kill", "restart"}},
		"crash, no restart":         {&faults.Crash{NoRestart: true}, []string{"kill"}},
		"consumer-restart":          {&faults.ConsumerRestart{}, []string{"kill_consumer", "restart_consumer"}},
		"replica-lag":               {&faults.ReplicaLag{}, []string{"replica_delay"}},
		"retention-expiry":          {&faults.RetentionExpiry{}, []string{"purge"}},
		"retention-expiry no purge": {&faults.RetentionExpiry{NoPurge: true}, nil},
		"response-drop":             {&faults.ResponseDrop{}, nil},
	}
	for name, tc := range hooks {
		if got := faults.HooksOf(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: HooksOf = %v, want %v", name, got, tc.want)
		}
	}
	if !faults.NeedsStandby(&faults.ReplicaLag{}) || faults.NeedsStandby(&faults.Crash{}) {
		t.Error("only replica-lag needs a standby")
	}
	if faults.AttemptsOf(&faults.RetentionExpiry{}) != 2 || faults.AttemptsOf(&faults.ResponseDrop{}) != 1 {
		t.Error("retention-expiry spans the lost attempt and the held retry; response-drop one attempt")
	}
}

func TestClone_SameParametersFreshValue(t *testing.T) {
	t.Parallel()
	orig := &faults.Crash{Point: "before-claim", NoRestart: true}
	c, ok := faults.Clone(orig).(*faults.Crash)
	if !ok || c == orig || c.Point != orig.Point || !c.NoRestart {
		t.Fatalf("Clone(%+v) = %+v", orig, c)
	}
	c.Point = "now"
	if orig.Point != "before-claim" {
		t.Fatal("changing the clone changed the original")
	}
}
