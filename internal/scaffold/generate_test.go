package scaffold_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/internal/scaffold"
	"github.com/idemchaos/idemchaos/scenarios"
)

// generate loads doc and generates its scenarios; every file must pass the
// loader's whole validation, as `idemchaos validate` applies it.
func generate(t *testing.T, doc string, opts scaffold.Options) map[string]*scenarios.Scenario {
	t.Helper()
	d, err := scaffold.Load(t.Context(), doc)
	if err != nil {
		t.Fatal(err)
	}
	files, err := scaffold.Generate(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*scenarios.Scenario{}
	for _, f := range files {
		s, err := scenarios.Parse(f.Name, []byte(f.Text))
		if err != nil {
			t.Fatalf("%s does not validate: %v\n%s", f.Name, err, f.Text)
		}
		if testing.Verbose() {
			t.Logf("%s:\n%s", f.Name, f.Text)
		}
		out[f.Name] = s
	}
	return out
}

func TestGenerate_Reference(t *testing.T) {
	got := generate(t, "../../reference/openapi.yaml", scaffold.Options{})
	if len(got) != 2 {
		t.Fatalf("want create-order.yaml and its -infra file, got %v", keys(got))
	}
	s := got["create-order.yaml"]
	if s == nil {
		t.Fatalf("no create-order.yaml in %v", keys(got))
	}
	e := s.Endpoint
	if e.Method != "POST" || e.Path != "/v1/orders" || e.KeyHeader != "Idempotency-Key" {
		t.Errorf("endpoint %s %s key %s", e.Method, e.Path, e.KeyHeader)
	}
	if e.Body != `{"sku":"{{sku}}","qty":{{qty}},"amount":{{amount}}}` {
		t.Errorf("body %s", e.Body)
	}
	if s.Contract.Profile != "ietf" {
		t.Errorf("contract %+v, want ietf (400 missing, 422 reuse, 409 in flight are documented)", s.Contract)
	}
	if s.Target.URL != "http://127.0.0.1:8080" {
		t.Errorf("target %s", s.Target.URL)
	}
	var names []string
	for _, st := range s.Steps {
		names = append(names, st.Name)
	}
	if want := "lost-responses double-clicks gateway-timeouts key-reuse twins cross-tenant callbacks"; strings.Join(names, " ") != want {
		t.Errorf("steps %q, want %q", strings.Join(names, " "), want)
	}
}

func keys(m map[string]*scenarios.Scenario) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

var _ = os.WriteFile
var _ = filepath.Join
