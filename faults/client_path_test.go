package faults_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

func TestClientPath_AnswersSayWhatTheProxyDoes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind    string
		forward bool
		status  int
		cut     string
		after   time.Duration
	}{
		{"unavailable", false, 503, "", time.Second},
		{"in-flight", false, 409, "", time.Second},
		{"reject", false, 422, "", 0},
		{"refuse", false, 0, faults.CutRefuse, 0},
		{"stall", true, 0, faults.CutStall, 0},
		{"gateway-5xx", true, 504, "", 0},
		{"rate-limit", false, 429, "", time.Second},
		{"response-drop", true, 0, faults.CutReset, 0},
		{"latency", true, 0, "", 0},
	}
	for _, c := range cases {
		f, err := faults.New(c.kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		a, ok := faults.ClientPathOf(f)
		if !ok {
			t.Fatalf("%s does not act on a client's path", c.kind)
		}
		if a.Forward != c.forward || a.Status != c.status || a.Cut != c.cut || a.RetryAfter != c.after {
			t.Errorf("%s: answer %+v", c.kind, a)
		}
		if !a.Proxied() && c.kind != "latency" {
			t.Errorf("%s: not proxied", c.kind)
		}
	}
	if f, _ := faults.New("crash"); faults.IsClientOnly(f) {
		t.Error("crash is client-only")
	}
	if _, ok := faults.ClientPathOf(&faults.Crash{}); ok {
		t.Error("crash acts on a client's path")
	}
}

func TestClientPath_ValidateRefusesBadParams(t *testing.T) {
	t.Parallel()
	bad := []faults.Fault{
		&faults.Reject{Status: 500},
		&faults.Refuse{How: "drop"},
		&faults.Unavailable{RetryAfter: -time.Second},
		&faults.InFlight{RetryAfter: -time.Second},
	}
	for _, f := range bad {
		if err := f.Validate(); !errors.Is(err, faults.ErrInvalidParams) {
			t.Errorf("%s %+v: %v", f.Kind(), f, err)
		}
	}
	f := &faults.InFlight{NoRetryAfter: true}
	if err := f.Validate(); err != nil || f.ClientAnswer().RetryAfter != 0 {
		t.Errorf("no_retry_after: %v %+v", err, f.ClientAnswer())
	}
}
