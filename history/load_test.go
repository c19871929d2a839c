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

// A client run's history loads with what the client checks read: the
// listener and the proxy's answers per attempt, the delay asked for, and
// each intent's invocation and belief.
func TestLoad_ClientFields(t *testing.T) {
	t.Parallel()
	in := `{"type":"meta","v":1,"mode":"client","client_contract":{"budget":3,"unknown":"forbidden"}}` + "\n" +
		`{"type":"invocation","intent":"i-1","tenant":"t1","ns":1,"action":"start","body":"{}"}` + "\n" +
		`{"type":"invoke","op":1,"intent":"i-1","tenant":"t1","key":"k","listener":"127.0.0.1:4000","attempt":1,"ns":2,"req":{"method":"POST","path":"/o","body":"{}"}}` + "\n" +
		`{"type":"ok","op":1,"ns":3,"resp":{"status":429},"by":"proxy","forwarded":false,"retry_after_ms":1000}` + "\n" +
		`{"type":"belief","intent":"i-1","ns":10,"belief":"unknown","exit":75,"error":"gave up"}` + "\n"
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Client() || h.Meta.ClientContract == nil || h.Meta.ClientContract.Budget != 3 || h.Meta.ClientContract.Unknown != "forbidden" {
		t.Fatalf("meta: %+v", h.Meta)
	}
	a := h.Attempts[0]
	if a.Listener != "127.0.0.1:4000" || !a.Proxied || a.Forwarded || a.RetryAfterMS != 1000 {
		t.Fatalf("attempt: %+v", a)
	}
	if len(h.Invocations) != 1 || h.Invocations[0].Intent != "i-1" || h.Invocations[0].BodyHash != history.Hash([]byte("{}")) {
		t.Fatalf("invocations: %+v", h.Invocations)
	}
	if want := (history.Belief{Intent: "i-1", Belief: "unknown", Exit: 75, Error: "gave up", NS: 10}); len(h.Beliefs) != 1 || h.Beliefs[0] != want {
		t.Fatalf("beliefs: %+v", h.Beliefs)
	}
	for _, bad := range []string{
		`{"type":"belief","intent":"i-1","belief":"maybe"}`,
		`{"type":"belief","belief":"success"}`,
		`{"type":"invocation","intent":""}`,
	} {
		if _, err := history.Load(strings.NewReader(meta+bad+"\n"), history.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: want an error at line 2, got %v", bad, err)
		}
	}
}
