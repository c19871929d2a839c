package history_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

func TestMeta_EffectsRecordedFalseIsKept(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := history.NewWriter(&buf)
	if err := w.Write(&history.Event{Type: history.TypeMeta, V: 1, EffectsUnread: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"effects_recorded":false`) {
		t.Fatalf("an unread oracle must be written as effects_recorded:false: %s", buf.String())
	}
	h, err := history.Load(&buf, history.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Meta.EffectsUnread || h.EffectsKnown {
		t.Errorf("loaded meta: unread %v, known %v; want true, false", h.Meta.EffectsUnread, h.EffectsKnown)
	}
}

func TestMeta_ContractErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"meta","v":1,"contract":{"reuse":"422"}}`:          `"reuse" must be an integer`,
		`{"type":"meta","v":1,"contract":{"in_flight":1}}`:          `"in_flight" must be an HTTP status code`,
		`{"type":"meta","v":1,"contract":{"replay_ignore":"Date"}}`: `"replay_ignore" must be an array`,
		`{"type":"meta","v":1,"contract":[]}`:                       `contract: must be an object`,
		`{"type":"meta","v":1,"contract":{"decision_bound_ms":-1}}`: `must not be negative`,
	} {
		_, err := history.Load(strings.NewReader(in+"\n"), history.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", in, err, want)
		}
	}
}

// The canonical fingerprint ignores what JSON does not mean (key order,
// whitespace, escapes) and keeps what it does (the type of a value).
func TestCanonicalHash(t *testing.T) {
	t.Parallel()
	base := history.CanonicalHash([]byte(`{"sku":"A","qty":1,"tags":["x",true,null]}`))
	for _, same := range []string{
		`{"qty":1,"sku":"A","tags":["x",true,null]}`,
		" {\n \"sku\" : \"A\", \"qty\":1 ,\"tags\":[\"x\", true, null]}\n",
		`{"sku":"\u0041","qty":1,"tags":["x",true,null]}`,
		`{"\u0073ku":"A","qty":1,"tags":["\u0078",true,null]}`,
		"{\"tags\":[\"x\",true,null],\r\n\"qty\":1,\"sku\":\"A\"}",
	} {
		if history.CanonicalHash([]byte(same)) != base {
			t.Errorf("%s: want the same canonical hash", same)
		}
	}
	for _, other := range []string{
		`{"sku":"A","qty":"1","tags":["x",true,null]}`,
		`{"sku":"A","qty":true,"tags":["x",true,null]}`,
		`{"sku":"A","qty":1,"tags":[true,"x",null]}`,
		`{"sku":"A","qty":1,"tags":["x",true]}`,
		`{"sku":"A","qty":1.0,"tags":["x",true,null]}`,
		`{"sku":"A","qty":1,"tags":["x",true,null],"sku":"A"}`,
		`{"sku":"A","qty":1,"tags":{"0":"x","1":true,"2":null}}`,
		`{"sku":"A","qty":[1],"tags":["x",true,null]}`,
	} {
		if history.CanonicalHash([]byte(other)) == base {
			t.Errorf("%s: want another canonical hash", other)
		}
	}
	if history.CanonicalHash([]byte("not json")) != history.Hash([]byte("not json")) {
		t.Error("a body that is not JSON must keep its byte hash")
	}
}

// Both load paths keep the same headers when a predicate keeps all but a few.
func TestLoad_KeepHeaderPredicate(t *testing.T) {
	t.Parallel()
	in := `{"type":"meta","v":1}` + "\n" +
		`{"type":"invoke","op":1,"ns":1,"req":{"method":"POST","path":"/o","body":"{\"b\":1, \"a\":2}"}}` + "\n" +
		`{"type":"ok","op":1,"ns":2,"resp":{"status":201,"headers":{"Location":"/o/1","Date":"x","Content-Type":"a/b"},"body":"{}"}}` + "\n"
	keep := func(name string) bool { return !strings.EqualFold(name, "Date") }
	for name, load := range map[string]func() (*history.History, error){
		"direct": func() (*history.History, error) {
			return history.Load(strings.NewReader(in), history.LoadOptions{KeepHeader: keep})
		},
		"by events": func() (*history.History, error) { return history.LoadByEventsWith(strings.NewReader(in), nil, keep) },
	} {
		h, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a := h.Attempts[0]
		if v, ok := a.RespHeaders.Get("Location"); !ok || v != "/o/1" {
			t.Errorf("%s: Location not kept: %+v", name, a.RespHeaders)
		}
		if _, ok := a.RespHeaders.Get("Date"); ok || len(a.RespHeaders) != 2 {
			t.Errorf("%s: want Content-Type and Location only: %+v", name, a.RespHeaders)
		}
		if a.ReqCanon != history.CanonicalHash([]byte(`{"a":2,"b":1}`)) || a.ReqCanon == a.ReqHash {
			t.Errorf("%s: canonical request hash not computed", name)
		}
	}
}
