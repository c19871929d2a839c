package reference

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"net/textproto"
	"testing"
)

// canonicalSeeds are bodies on both sides of every decline of
// canonicalFlat: the plain ones it must take, and escapes, HTML bytes,
// non-ASCII, literals, nesting, duplicates, bad numbers and trailing bytes
// that it must leave to canonicalGeneral.
var canonicalSeeds = []string{
	`{"sku":"A-100","qty":2,"amount":500}`,
	` { "amount" : 500 ,"qty":2, "sku":"A-100" } ` + "\n",
	"{\t\"sku\":\"A-100\",\r\n\"qty\":2,\"amount\":500,\"note\":\"x y\"}",
	`{"sku":"A-100","qty":2,"amount":500,"extra":-1.5e+3}`,
	`{"sku":"A-100","qty":2,"amount":500,"z":0.0,"a":-0,"b":1E9}`,
	`{"sku":"A-100","qty":2,"amount":500,"sku":"B"}`,
	`{"sku":"A<100","qty":2,"amount":500}`,
	`{"sku":"A&100","qty":2,"amount":500}`,
	`{"sku":"A\u0041","qty":2,"amount":500}`,
	`{"sku":"A\"1","qty":2,"amount":500}`,
	`{"sku":"Ä","qty":2,"amount":500}`,
	"{\"sku\":\"A\x7f\",\"qty\":2,\"amount\":500}",
	"{\"sku\":\"A\xff\",\"qty\":2,\"amount\":500}",
	`{"sku":"A-100","qty":2.0,"amount":500}`,
	`{"sku":"A-100","qty":2e0,"amount":500}`,
	`{"sku":"A-100","qty":02,"amount":500}`,
	`{"sku":"A-100","qty":"2","amount":500}`,
	`{"sku":"A-100","qty":2,"amount":500,"ok":true}`,
	`{"sku":"A-100","qty":2,"amount":500,"n":null}`,
	`{"sku":"A-100","qty":2,"amount":500,"o":{"a":1}}`,
	`{"sku":"A-100","qty":2,"amount":500,"l":[1]}`,
	`{"sku":"A-100","qty":2,"amount":500}}`,
	`{"sku":"A-100","qty":2,"amount":500}]`,
	`{"sku":"A-100","qty":2,"amount":500} {}`,
	`{"sku":"A-100","qty":2,"amount":500}x`,
	`{"sku":"A-100","qty":2,"amount":500,}`,
	`{"sku":"A-100" "qty":2,"amount":500}`,
	`{"sku":"","qty":2,"amount":500}`,
	`{"sku":"A-100","qty":0,"amount":500}`,
	`{"sku":"A-100","qty":1001,"amount":500}`,
	`{"sku":"A-100","qty":2,"amount":1000000001}`,
	`{"sku":"A-100","qty":2,"amount":99999999999999999999}`,
	`{"sku":"A-100","qty":2}`,
	`{"qty":2,"amount":500}`,
	`{}`, `[]`, `null`, `"x"`, `1`, ``, `{`, `{"sku"`, `{"sku":`, `{"sku":"A`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"sku":"A","qty":2,"amount":500}`,
	"\ufeff{\"sku\":\"A-100\",\"qty\":2,\"amount\":500}",
}

// sameAsGeneral fails t unless canonicalFlat either declines raw or
// returns exactly what canonicalGeneral returns for it.
func sameAsGeneral(t *testing.T, raw []byte) bool {
	canon, body, ok := canonicalFlat(raw)
	if !ok {
		return false
	}
	gCanon, gBody, err := canonicalGeneral(raw)
	if err != nil {
		t.Fatalf("%q: fast path accepted what the general path rejects: %v", raw, err)
	}
	if !bytes.Equal(canon, gCanon) || body != gBody {
		t.Fatalf("%q: fast path gave %s %+v, general path %s %+v", raw, canon, body, gCanon, gBody)
	}
	return true
}

func TestCanonicalFlat_SameAsGeneralPath(t *testing.T) {
	took := 0
	for _, s := range canonicalSeeds {
		if sameAsGeneral(t, []byte(s)) {
			took++
		}
	}
	// The fast path must actually be taken for plain bodies, or the
	// comparison above proves nothing.
	if took < 5 {
		t.Fatalf("fast path took %d of the seeds, want at least the 5 plain ones", took)
	}
	// Random single-byte edits of plain bodies reach the boundaries the
	// seeds do not list.
	alphabet := []byte("{}[]\":,.-+eE0129 \t\n\\u<&>aAqstxyz\x7f\xc3\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := []byte(canonicalSeeds[rng.IntN(5)])
		for range 1 + rng.IntN(3) {
			switch i := rng.IntN(len(b)); rng.IntN(3) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
			if len(b) == 0 {
				break
			}
		}
		sameAsGeneral(t, b)
	}
}

func FuzzCanonicalFlat(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameAsGeneral(t, raw) })
}

func TestPlainHeaders_SameAsEncodingJSON(t *testing.T) {
	cases := []string{
		`{"Content-Type":"application/json","Location":"/v1/orders/ord_ABC"}`,
		`{"Location": "/v1/orders/x", "Content-Type": "application/json"}`,
		` {} `, `{"A":"1","A":"2"}`, `{"A":"1",}`, `{"A":1}`, `{"A":"\u0041"}`, `{"A":"<"}`, `null`, `[]`, ``,
		`{"A":"1"} x`, `{"A":"1" "B":"2"}`, `{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":""}`,
	}
	took := 0
	for _, c := range cases {
		kv, n, ok := plainHeaders([]byte(c))
		if !ok {
			continue
		}
		took++
		var want map[string]string
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", c, err)
		}
		got := map[string]string{}
		for _, h := range kv[:n] {
			got[h[0]] = h[1]
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%q: fast path %v, encoding/json %v", c, got, want)
		}
	}
	if took != 4 {
		t.Fatalf("fast path took %d cases, want the 4 plain ones", took)
	}
}

// TestHeaderNames_Canonical: the header constants are in canonical form,
// so the per-request Get and Set calls do not allocate a canonical copy.
func TestHeaderNames_Canonical(t *testing.T) {
	for _, h := range []string{headerIdempotencyKey, headerReplayed, headerRequestID, headerIntent} {
		if c := textproto.CanonicalMIMEHeaderKey(h); c != h {
			t.Errorf("%q is %q in canonical form", h, c)
		}
	}
}

// A body Postgres cannot store (\u0000: a 500 on every retry), or that
// decodes to the text of another (a lone surrogate escape, bytes not
// UTF-8: all U+FFFD, so one payload replayed another's answer), is
// refused as invalid (400) before any write (issue #22). A surrogate pair
// and a literal U+FFFD stay accepted, apart.
func TestCanonicalGeneral_TextRefused(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"sku":"a\u0000b","qty":1,"amount":1}`,
		`{"sku":"a","qty":1,"amount":1,"note":"\u0000"}`,
		`{"sku":"\ud800","qty":1,"amount":1}`,
		`{"sku":"\ud801","qty":1,"amount":1}`,
		`{"sku":"\udc00x","qty":1,"amount":1}`,
		`{"sku":"\ud800\u0041","qty":1,"amount":1}`,
		"{\"sku\":\"a\xffb\",\"qty\":1,\"amount\":1}",
	} {
		if _, _, err := canonicalOrder([]byte(raw)); !errors.Is(err, errBodyText) {
			t.Errorf("%q: %v, want errBodyText", raw, err)
		}
	}
	pair, _, err := canonicalOrder([]byte(`{"sku":"\ud83d\ude00","qty":1,"amount":1}`))
	if err != nil {
		t.Fatalf("surrogate pair: %v", err)
	}
	fffd, _, err := canonicalOrder([]byte(`{"sku":"\ufffd","qty":1,"amount":1}`))
	if err != nil || bytes.Equal(pair, fffd) {
		t.Fatalf("U+FFFD: %v, canonical %s and %s", err, pair, fffd)
	}
	if _, _, err := canonicalOrder([]byte(`{"sku":"a\\u0000","qty":1,"amount":1}`)); err != nil {
		t.Errorf("an escaped backslash before u0000 is text: %v", err)
	}
}
