package scaffold_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/scaffold"
)

// customerAPI is an order API whose tenant travels in a header named
// HEADER, described as DESCRIPTION, beside an anonymous security scheme.
const customerAPI = `openapi: 3.0.3
info: {title: orders, version: "1"}
servers: [{url: "http://127.0.0.1:8080"}]
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
        - {name: HEADER, in: header, required: true, description: "DESCRIPTION", schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {sku: {type: string}}}
      responses:
        "201": {description: created}
        "422": {description: key reused}
        "409": {description: in flight}
`

// TestGenerate_TenantHeaderByNameDescriptionOrFlag: a tenant header is
// recognised by its name (X-Customer-Id, X-Workspace-Id: hyphenated ids
// were missed, customers never matched) or by its description, or named
// with --tenant-header; each is sent per tenant, never as a static header.
func TestGenerate_TenantHeaderByNameDescriptionOrFlag(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		header, description, flag, want string
	}{
		"customer id":        {"X-Customer-Id", "", "", "X-Customer-Id"},
		"workspace id":       {"X-Workspace-Id", "", "", "X-Workspace-Id"},
		"organization":       {"Organization", "", "", "Organization"},
		"by description":     {"X-Caller", "The customer on whose behalf the order is placed.", "", "X-Caller"},
		"by --tenant-header": {"X-Principal", "Who is calling.", "X-Principal", "X-Principal"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc := strings.NewReplacer("HEADER", c.header, "DESCRIPTION", c.description).Replace(customerAPI)
			file := writeDoc(t, doc)
			got := generate(t, file, scaffold.Options{TenantHeader: c.flag})
			s := got["create-order.yaml"]
			if s == nil {
				t.Fatalf("files %v", keys(got))
			}
			e := s.Endpoint
			if e.Tenant.In != "header" || e.Tenant.Name != c.want {
				t.Fatalf("tenant %+v, want the header %s", e.Tenant, c.want)
			}
			if _, static := e.Headers[c.want]; static {
				t.Errorf("the tenant's header is also a static header: %v", e.Headers)
			}
		})
	}
}

func writeDoc(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
