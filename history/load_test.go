package history_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

func TestLoad_JoinsAttemptsAndOutcomes(t *testing.T) {
	t.Parallel()
	in := meta +
		`{"type":"invoke","op":1,"intent":"i1","tenant":"t1","key":"k1","ns":10,"req":{"method":"POST","path":"/v1/orders","body":"{}"}}` + "\n" +
		`{"type":"invoke","op":2,"tenant":"t1","key":"k2","ns":11}` + "\n" +
		`{"type":"invoke","op":3,"tenant":"t1","key":"k3","ns":12}` + "\n" +
		`{"type":"ok","op":1,"ns":20,"resp":{"status":201,"headers":{"content-type":"application/json","Date":"x"},"body":"{\"id\":1}"}}` + "\n" +
		`{"type":"fail","op":3,"ns":21,"error":"refused"}` + "\n" +
		`{"type":"effect","tenant":"t1","key":"k1","effect":"order 1","ns":30}` + "\n"
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 3 || h.Events != 7 || h.End != 30 || !h.EffectsKnown || !h.IntentsKnown {
		t.Fatalf("unexpected history %+v", h)
	}
	a1, a2, a3 := h.Attempts[0], h.Attempts[1], h.Attempts[2]
	if a1.Outcome != history.OK || a1.Status != 201 || a1.RespPreview != `{"id":1}` || a1.Method != "POST" {
		t.Errorf("attempt 1: %+v", a1)
	}
	if v, _ := a1.RespHeaders.Get("Content-Type"); v != "application/json" || len(a1.RespHeaders) != 1 {
		t.Errorf("attempt 1 headers: %+v (Date must be dropped)", a1.RespHeaders)
	}
	if a2.Outcome != history.Info || a2.Done() || a2.Intent != "key:t1/k2" {
		t.Errorf("an attempt without completion must load as info with a key intent: %+v", a2)
	}
	if a3.Outcome != history.Fail {
		t.Errorf("attempt 3: %+v", a3)
	}
	if h.Effects[0].Kind != "order" {
		t.Errorf("effect kind %q", h.Effects[0].Kind)
	}
}

func TestLoad_RejectsInconsistentOps(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"completion without invoke": meta + `{"type":"ok","op":9,"ns":1,"resp":{"status":200}}` + "\n",
		"invoked twice":             meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"invoke","op":1,"ns":2}` + "\n",
		"completed twice":           meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"info","op":1,"ns":2}` + "\n" + `{"type":"fail","op":1,"ns":3}` + "\n",
		"empty":                     "",
		"two metas":                 meta + meta,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := history.Load(strings.NewReader(in), history.LoadOptions{})
			var le *history.LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a line error", err)
			}
		})
	}
}

func TestLoad_TruncatedIsFlaggedNotFailed(t *testing.T) {
	t.Parallel()
	h, err := history.Load(strings.NewReader(meta+`{"type":"invoke","op":1,"ns":1}`+"\n"+`{"type":"ok","op":1,"ns`), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Truncated || h.Attempts[0].Outcome != history.Info {
		t.Fatalf("got truncated=%v outcome=%v", h.Truncated, h.Attempts[0].Outcome)
	}
}
