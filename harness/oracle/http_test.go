package oracle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
		fx, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: items, Tenant: "$.org.name", Key: "$['idem']", ID: "$.id"}).Effects(context.Background())
		if err != nil {
			t.Errorf("%s: %v", items, err)
			continue
		}
		if got := ids(fx); got != want {
			t.Errorf("%s:\n got %s\nwant %s", items, got, want)
		}
	}
	if _, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: "$.data.effects[*]", Tenant: "$.*", Key: "", ID: "$.id"}).Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
		t.Errorf("a tenant path that selects several values: %v", err)
	}
	if _, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL, Items: "$.data.effects[*]", Tenant: "$.nope", Key: "", ID: "$.id"}).Effects(context.Background()); !errors.Is(err, oracle.ErrOracle) {
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

// listing serves per-customer orders the way a team's own API does: the
// customer from a header (or the path), a bearer token that must be the
// customer's, two orders a page, and the next page as a cursor or a link.
func listing(t *testing.T, orders map[string][]string, link bool) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		customer := r.Header.Get("X-Customer")
		if c := r.PathValue("c"); c != "" {
			customer = c
		}
		if customer == "" {
			customer = strings.TrimPrefix(r.URL.Path, "/customers/")
			customer, _, _ = strings.Cut(customer, "/")
		}
		if r.Header.Get("Authorization") != "Bearer tok-"+customer {
			http.Error(w, "wrong token", http.StatusForbidden)
			return
		}
		all := orders[customer]
		from := 0
		if c := r.URL.Query().Get("after"); c != "" {
			fmt.Sscan(c, &from)
		}
		end := min(from+2, len(all))
		var items []string
		for i, key := range all[from:end] {
			items = append(items, fmt.Sprintf(`{"id":"%s#%d","key":%q}`, strings.ReplaceAll(customer, " ", "_"), from+i, key))
		}
		next := "null"
		if end < len(all) {
			next = fmt.Sprintf(`"%d"`, end)
			if link {
				next = fmt.Sprintf(`"%s?limit=2&after=%d"`, r.URL.Path, end)
			}
		}
		fmt.Fprintf(w, `{"data":[%s],"next":%s}`, strings.Join(items, ","), next)
	}))
}

// A per-customer listing is read once per tenant, with the tenant and its
// token rendered into the URL and the headers, every page followed; the
// items carry no tenant, so each is the read's tenant's.
func TestHTTP_PerTenantPagedListing(t *testing.T) {
	t.Parallel()
	orders := map[string][]string{"a b": {"k1", "k2", "k3", "k4", "k5"}, "t2": {"k1"}, "t3": nil}
	tenants := []oracle.Tenant{{Name: "a b", Token: "tok-a b"}, {Name: "t2", Token: "tok-t2"}, {Name: "t3", Token: "tok-t3"}}
	want := "a b/k1/effect/a_b#0 a b/k2/effect/a_b#1 a b/k3/effect/a_b#2 a b/k4/effect/a_b#3 a b/k5/effect/a_b#4 t2/k1/effect/t2#0"
	for name, c := range map[string]struct {
		link bool
		cfg  oracle.HTTPConfig
	}{
		"header and cursor": {false, oracle.HTTPConfig{URL: "/orders?limit=2", Headers: map[string]string{"X-Customer": "{{tenant}}", "Authorization": "Bearer {{token}}"},
			Next: "$.next", Cursor: "after"}},
		"path and link": {true, oracle.HTTPConfig{URL: "/customers/{{tenant}}/orders", Headers: map[string]string{"Authorization": "Bearer {{token}}"}, Next: "$.next"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := listing(t, orders, c.link)
			defer srv.Close()
			cfg := c.cfg
			cfg.URL = srv.URL + cfg.URL
			cfg.Items, cfg.Key, cfg.ID, cfg.Tenants = "$.data[*]", "$.key", "$.id", tenants
			fx, err := oracle.HTTP(cfg).Effects(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(fx); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			// Without Next, only the first page of each tenant is read.
			cfg.Next, cfg.Cursor = "", ""
			fx, err = oracle.HTTP(cfg).Effects(context.Background())
			if err != nil || len(fx) != 3 {
				t.Fatalf("one page each: %d effects (%v), want 3", len(fx), err)
			}
		})
	}
}

// A listing that does not end is an error, never a hang, and a next link
// to another service is not followed.
func TestHTTP_PagingThatGoesWrong(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			fmt.Fprint(w, `{"data":[{"t":"t1","k":"k1","id":1}],"next":"/loop"}`)
		case "/away":
			fmt.Fprintf(w, `{"data":[],"next":%q}`, other.URL+"/x")
		case "/many":
			fmt.Fprint(w, `{"data":[],"next":["a","b"]}`)
		case "/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/loop":      "a page already read: the listing loops",
		"/away":      "leads away from",
		"/many":      "an object or array",
		"/forbidden": "GET " + srv.URL + "/forbidden: status 403",
	} {
		_, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL + path, Items: "$.data[*]", Tenant: "$.t", Key: "$.k", ID: "$.id", Next: "$.next"}).Effects(context.Background())
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, oracle.ErrOracle) {
			t.Errorf("%s: %v, want ErrOracle containing %q", path, err, want)
		}
	}
	_, err := oracle.HTTP(oracle.HTTPConfig{URL: srv.URL + "/orders/{{tenant}}", Items: "$.data[*]", Key: "$.k", ID: "$.id"}).Effects(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no tenants to read for") {
		t.Errorf("a per-tenant URL with no tenants: %v", err)
	}
}

// A per-tenant read that finds nothing says where it read as written (the
// placeholders, never a tenant's token) and what the last page said, so
// that a wrong URL is told from a service that made nothing.
func TestHTTP_ReadingOfAnEmptyPerTenantListing(t *testing.T) {
	t.Parallel()
	srv := listing(t, map[string][]string{}, false)
	defer srv.Close()
	cfg := oracle.HTTPConfig{URL: srv.URL + "/customers/{{tenant}}/orders", Headers: map[string]string{"Authorization": "Bearer {{token}}"},
		Items: "$.data[*]", Key: "$.key", ID: "$.id", Tenants: []oracle.Tenant{{Name: "t1", Token: "tok-t1"}, {Name: "t2", Token: "tok-t2"}}}
	r, err := oracle.Read(context.Background(), oracle.HTTP(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if want := "GET " + srv.URL + "/customers/{{tenant}}/orders once per tenant (2)"; r.Source != want || len(r.Effects) != 0 {
		t.Errorf("source %q, %d effects; want %q", r.Source, len(r.Effects), want)
	}
	if r.Got != `200 {"data":[],"next":null}` || strings.Contains(r.Source+r.Got, "tok-") {
		t.Errorf("got %q", r.Got)
	}
}
