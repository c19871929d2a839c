package oracle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemchaos/idemchaos/harness/oracle"
)

// The http oracle speaks standard JSONPath (RFC 9535): filters, bracket
// names and a list given as the array itself all work, and a numeric id
// comes back as written. The old private dialect rejected the filter and
// the brackets at run time, after the traffic.
func TestHTTP_StandardJSONPath(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":{"effects":[
			{"kind":"order","org":{"name":"t1"},"idem":"k1","id":12345678901234567890},
			{"kind":"audit","org":{"name":"t1"},"idem":"k1","id":7},
			{"kind":"order","org":{"name":"t2"},"idem":"k1","id":"ord-9"}]}}`)
	}))
	defer srv.Close()
	cases := map[string]string{
		"$.data.effects[?@.kind=='order']":         "t1/k1/effect/12345678901234567890 t2/k1/effect/ord-9",
		"$['data']['effects'][?(@.kind=='order')]": "t1/k1/effect/12345678901234567890 t2/k1/effect/ord-9",
		"$.data.effects":                           "t1/k1/effect/12345678901234567890 t1/k1/effect/7 t2/k1/effect/ord-9",
		"$.data.effects[?@.kind=='refund']":        "",
	}
	for items, want := range cases {
		fx, err := oracle.HTTP(srv.URL, items, "$.org.name", "$['idem']", "$.id").Effects(context.Background())
		if err != nil {
			t.Errorf("%s: %v", items, err)
			continue
		}
		if got := ids(fx); got != want {
			t.Errorf("%s:\n got %s\nwant %s", items, got, want)
		}
	}
	if _, err := oracle.HTTP(srv.URL, "$.data.effects[*]", "$.*", "", "$.id").Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
		t.Errorf("a tenant path that selects several values: %v", err)
	}
	if _, err := oracle.HTTP(srv.URL, "$.data.effects[*]", "$.nope", "", "$.id").Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
		t.Errorf("a field path that selects nothing: %v", err)
	}
}

func TestResponseID(t *testing.T) {
	t.Parallel()
	pick, err := oracle.ResponseID("$.order.id")
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"order":{"id":12345678901234567890}}`: "12345678901234567890",
		`{"order":{"id":"o-1"}}`:                "o-1",
		`{"order":{}}`:                          "",
		`not json`:                              "",
	} {
		got, ok := pick([]byte(body))
		if got != want || ok != (want != "") {
			t.Errorf("%s: got %q %v, want %q", body, got, ok, want)
		}
	}
	if _, err := oracle.ResponseID("$.order["); !errors.Is(err, oracle.ErrOracle) {
		t.Errorf("a bad expression: %v", err)
	}
}
