package scaffold_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/scaffold"
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
	got := generate(t, "../../../../reference/openapi.yaml", scaffold.Options{})
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
	if s.Contract.Profile != "ietf" || s.Contract.Fingerprint != "" {
		t.Errorf("contract %+v, want ietf (400 missing, 422 reuse, 409 in flight are documented), the fingerprint probe off", s.Contract)
	}
	d, _ := scaffold.Load(t.Context(), "../../../../reference/openapi.yaml")
	files, _ := scaffold.Generate(d, scaffold.Options{})
	if !strings.Contains(files[0].Text, "\n  #   fingerprint: canonical\n") {
		t.Error("the documented canonical fingerprint is not offered (commented) in the contract")
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
	// The infrastructure file's crashes are aimed at attempts (issue 23
	// item 7), so that they fire while requests are in flight: a crash at
	// a fixed time (at: 0s) fired before any request.
	var infra *scenarios.Scenario
	for name, sc := range got {
		if name != "create-order.yaml" {
			infra = sc
		}
	}
	crashes := 0
	for _, st := range infra.Steps {
		for _, f := range st.Faults {
			if f.Kind != "crash" {
				continue
			}
			crashes++
			if f.When.Nth <= 0 || f.When.At != 0 {
				t.Errorf("step %s: crash when %+v, want aimed at every n-th intent's attempt, not at a time", st.Name, f.When)
			}
		}
	}
	if crashes < 2 {
		t.Errorf("the infrastructure file has %d crash faults, want its two crash steps'", crashes)
	}
}

func keys(m map[string]*scenarios.Scenario) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func stepNames(s *scenarios.Scenario) string {
	var names []string
	for _, st := range s.Steps {
		names = append(names, st.Name)
	}
	return strings.Join(names, " ")
}

// A Stripe-shaped API: form bodies, an optional key, the connected account
// in a header, 400 for reuse and 409 in flight (the stripe profile).
func TestGenerate_FormBodiesAccountHeaderStripeDialect(t *testing.T) {
	got := generate(t, "../../../../testdata/openapi/stripe-like.yaml", scaffold.Options{})
	if len(got) != 4 {
		t.Fatalf("want charges and refunds (not the GET), each with an -infra file; got %v", keys(got))
	}
	s := got["create-charge.yaml"]
	e := s.Endpoint
	if e.Headers["Content-Type"] != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type %q", e.Headers["Content-Type"])
	}
	if want := "amount={{amount}}&currency=usd&source=tok_visa&metadata[order_id]={{uuid}}"; e.Body != want {
		t.Errorf("body\n got %s\nwant %s", e.Body, want)
	}
	if e.Tenant.In != "header" || e.Tenant.Name != "Payments-Account" || e.Headers["Payments-Version"] != "2024-06-20" {
		t.Errorf("tenant %+v, headers %v: want the account header as the tenant and the required version header with its example", e.Tenant, e.Headers)
	}
	if _, static := e.Headers["Payments-Account"]; static {
		t.Error("the tenant's header is also a static header")
	}
	if len(e.Tokens) != 3 || e.Tokens["t1"] != "TODO-token" {
		t.Errorf("tokens %v: the platform's bearer key per account, marked TODO", e.Tokens)
	}
	if s.Contract.Profile != "stripe" || s.Contract.Fingerprint != "" {
		t.Errorf("contract %+v, want stripe (400 reuse, 409 in flight, optional key), no fingerprint (undocumented)", s.Contract)
	}
	if want := "lost-responses double-clicks gateway-timeouts key-reuse twins cross-tenant"; stepNames(s) != want {
		t.Errorf("steps %q, want %q", stepNames(s), want)
	}
	d, _ := scaffold.Load(t.Context(), "../../../../testdata/openapi/stripe-like.yaml")
	files, _ := scaffold.Generate(d, scaffold.Options{})
	if len(files[0].Notes) != 0 {
		t.Errorf("notes %v: a tenant in a header is expressible", files[0].Notes)
	}
	if !strings.Contains(files[0].Text, "guess:") {
		t.Error("no guess is flagged")
	}
}

// An API with the merchant account in the path, a custom key header, an
// API-key header, JSON bodies using $ref, oneOf, allOf and 3.1 type arrays,
// and a 409-reuse / 425-in-flight dialect (a custom profile).
func TestGenerate_AccountInPathCustomDialect(t *testing.T) {
	got := generate(t, "../../../../testdata/openapi/account-path.json", scaffold.Options{KeyHeader: "x-idempotency-key", Operations: []string{"createPayout"}})
	s := got["create-payment.yaml"]
	if s == nil {
		t.Fatalf("no create-payment.yaml in %v", keys(got))
	}
	e := s.Endpoint
	if e.Path != "/api/v2/accounts/{{tenant}}/payments" || e.Tenant.In != "path" || e.KeyHeader != "X-Idempotency-Key" || e.Headers["X-API-Key"] == "" {
		t.Errorf("endpoint path %s tenant %+v key %s headers %v", e.Path, e.Tenant, e.KeyHeader, e.Headers)
	}
	if want := "lost-responses double-clicks gateway-timeouts key-reuse twins cross-tenant"; stepNames(s) != want {
		t.Errorf("steps %q, want %q", stepNames(s), want)
	}
	want := `{"merchant_reference":"{{uuid}}","payment_method":{"token":"tok_4111","type":"card"},"shopper":{"email":"buyer@example.com","country":"NL"},"amount":{"value":{{amount}},"currency":"EUR"}}`
	if e.Body != want {
		t.Errorf("body\n got %s\nwant %s", e.Body, want)
	}
	c := s.Contract
	if c.Profile != "custom" || c.MissingKey != 400 || c.Reuse != 409 || c.InFlight != 425 {
		t.Errorf("contract %+v, want custom 400/409/425", c)
	}
	if s.Target.URL != "http://127.0.0.1:8300" {
		t.Errorf("target %s: the document's loopback server", s.Target.URL)
	}
	p := got["create-payout.yaml"]
	if p == nil {
		t.Fatalf("--operation createPayout wrote nothing: %v", keys(got))
	}
	if p.Contract.MissingKey != 0 || p.Endpoint.KeyHeader != "x-idempotency-key" {
		t.Errorf("payout: %+v key %s: an undeclared key is optional, sent under --key-header", p.Contract, p.Endpoint.KeyHeader)
	}
}

func TestGenerate_BadSelections(t *testing.T) {
	d, err := scaffold.Load(t.Context(), "../../../../testdata/openapi/account-path.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		opts scaffold.Options
		want string
	}{
		"unknown operation": {scaffold.Options{KeyHeader: "X-Idempotency-Key", Operations: []string{"createPayot"}}, "no operation createPayot"},
		"a read":            {scaffold.Options{KeyHeader: "X-Idempotency-Key", Operations: []string{"listPayouts"}}, "GET is not a write"},
		"no key header":     {scaffold.Options{}, "no write operation declares a Idempotency-Key header"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := scaffold.Generate(d, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want %q", err, c.want)
			}
		})
	}
	if _, err := scaffold.Load(t.Context(), "../../../../testdata/openapi/nope.yaml"); err == nil {
		t.Error("a missing file loaded")
	}
	bad := filepath.Join(t.TempDir(), "swagger.yaml")
	if err := os.WriteFile(bad, []byte("swagger: \"2.0\"\ninfo: {title: x, version: \"1\"}\npaths: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scaffold.Load(t.Context(), bad); err == nil {
		t.Error("a Swagger 2.0 document loaded")
	} else {
		t.Log(err)
	}
}

// Without a credential, a tenant-like body field carries the tenant
// (endpoint.tenant in: body), and a body field named for the key carries it.
func TestGenerate_TenantInBody(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "ledger.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.1.0
info: {title: ledger, version: "1"}
servers: [{url: "http://localhost:7000"}]
paths:
  /entries:
    post:
      operationId: postEntry
      parameters: [{name: Idempotency-Key, in: header, required: true, schema: {type: string}}]
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [tenant_id, idempotency_key, amount]
              properties:
                tenant_id: {type: string}
                idempotency_key: {type: string}
                amount: {type: integer}
      responses: {"201": {description: ok}, "422": {description: "The Idempotency-Key was reused with a different body."}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := generate(t, doc, scaffold.Options{})["post-entry.yaml"]
	if s == nil {
		t.Fatal("no post-entry.yaml")
	}
	if s.Endpoint.Tenant.In != "body" || s.Endpoint.Body != `{"tenant_id":"{{tenant}}","idempotency_key":"{{key}}","amount":{{amount}}}` {
		t.Errorf("tenant %+v body %s", s.Endpoint.Tenant, s.Endpoint.Body)
	}
	if s.Target.URL != "http://localhost:7000" {
		t.Errorf("target %s: a localhost server is kept", s.Target.URL)
	}
}
