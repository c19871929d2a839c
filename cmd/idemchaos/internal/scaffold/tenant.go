package scaffold

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// tenancy is where an operation's tenant lives, as far as the document
// says, and whether this version of the scenario format can send several
// tenants that way.
type tenancy struct {
	// in is bearer, path, header, query, apikey, basic or none.
	in   string
	name string // the parameter or header name (path, header, query, apikey)
	// multi says the scenario can send distinct tenants: a bearer token,
	// a header, query or path parameter, or a body field per tenant (an
	// API key or a basic-auth user cannot: they are credentials).
	multi bool
	// bearer says the operation also authenticates with a bearer token
	// (the platform's key when the tenant is an account in a header).
	bearer bool
	why    string
	// pathValue replaces {name} in the path when the tenant is in it.
	pathValue string
}

// tenantParam matches the names of parameters that carry the tenant:
// X-Tenant-Id, Customer, X-Customer-ID, Stripe-Account, workspace_id...
var tenantParam = regexp.MustCompile(`(?i)^(x-)?(tenant|account|customer|merchant|organi[sz]ation|org|workspace|company|shop|store)([-_]?id)?$|(?i)-(account|tenant|merchant|customer|organi[sz]ation|org|workspace|company)([-_]?id)?$`)

// tenantWords finds a tenant in a parameter's description ("the customer
// on whose behalf the order is placed").
var tenantWords = regexp.MustCompile(`(?i)\b(tenants?|customers?|accounts?|organi[sz]ations?|workspaces?|merchants?)\b`)

// findTenancy infers the tenant's location: the header --tenant-header
// names; a tenant-like path, header or query parameter of the operation
// (Stripe-Account, {account_id}, X-Customer-Id), by its name, then a header
// whose description speaks of the tenant; then the security scheme the
// operation uses.
func findTenancy(t *openapi3.T, o *operation, opts Options) tenancy {
	if name := opts.TenantHeader; name != "" {
		return tenancy{in: "header", name: name, multi: true, bearer: usesBearer(t, o), why: fmt.Sprintf("the tenant is the header %q (--tenant-header)", name)}
	}
	for _, in := range []string{"path", "header", "query"} {
		for _, p := range o.params {
			if p.Value == nil || p.Value.In != in || !tenantParam.MatchString(p.Value.Name) {
				continue
			}
			tn := tenancy{in: in, name: p.Value.Name, multi: true, bearer: usesBearer(t, o), why: fmt.Sprintf("guess: the %s parameter %q looks like the tenant (from its name)", in, p.Value.Name)}
			if in == "path" {
				tn.pathValue = exampleOf(p.Value, "acct_1")
			}
			return tn
		}
	}
	for _, p := range o.params {
		v := p.Value
		if v == nil || v.In != "header" || strings.EqualFold(v.Name, opts.KeyHeader) || strings.EqualFold(v.Name, "Authorization") ||
			(o.keyParam != nil && strings.EqualFold(v.Name, o.keyParam.Name)) || !tenantWords.MatchString(v.Description) {
			continue
		}
		return tenancy{in: "header", name: v.Name, multi: true, bearer: usesBearer(t, o),
			why: fmt.Sprintf("guess: the header %q looks like the tenant (from its description: %q)", v.Name, strings.TrimSpace(v.Description))}
	}
	reqs := t.Security
	if o.op.Security != nil {
		reqs = *o.op.Security
	}
	var names []string
	for _, req := range reqs {
		for n := range req {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if t.Components == nil || t.Components.SecuritySchemes[n] == nil || t.Components.SecuritySchemes[n].Value == nil {
			continue
		}
		s := t.Components.SecuritySchemes[n].Value
		switch {
		case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"), s.Type == "oauth2", s.Type == "openIdConnect":
			return tenancy{in: "bearer", multi: true, why: fmt.Sprintf("guess: the tenant is whoever the bearer token (security scheme %q) belongs to, one token per tenant", n)}
		case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
			return tenancy{in: "basic", why: fmt.Sprintf("the security scheme %q is HTTP basic auth", n)}
		case s.Type == "apiKey" && s.In == "header" && strings.EqualFold(s.Name, "Authorization"):
			return tenancy{in: "bearer", multi: true, why: fmt.Sprintf("guess: the security scheme %q is a key in Authorization; sent as \"Bearer <token>\"", n)}
		case s.Type == "apiKey":
			return tenancy{in: "apikey", name: s.Name, why: fmt.Sprintf("the security scheme %q is an API key in the %s %q", n, s.In, s.Name)}
		}
	}
	return tenancy{in: "none", why: "the operation names no security scheme and no tenant-like parameter: one tenant"}
}

// usesBearer says the operation's security includes a bearer token.
func usesBearer(t *openapi3.T, o *operation) bool {
	reqs := t.Security
	if o.op.Security != nil {
		reqs = *o.op.Security
	}
	for _, req := range reqs {
		for n := range req {
			if t.Components == nil || t.Components.SecuritySchemes[n] == nil || t.Components.SecuritySchemes[n].Value == nil {
				continue
			}
			sc := t.Components.SecuritySchemes[n].Value
			if sc.Type == "http" && strings.EqualFold(sc.Scheme, "bearer") || sc.Type == "oauth2" || sc.Type == "openIdConnect" {
				return true
			}
		}
	}
	return false
}

// exampleOf is a parameter's example, its schema's example or default, or def.
func exampleOf(p *openapi3.Parameter, def string) string {
	for _, x := range []any{p.Example} {
		if s, ok := x.(string); ok && s != "" {
			return s
		}
	}
	if p.Schema != nil && p.Schema.Value != nil {
		for _, x := range []any{p.Schema.Value.Example, p.Schema.Value.Default} {
			if x != nil {
				return fmt.Sprint(x)
			}
		}
		if len(p.Schema.Value.Enum) > 0 {
			return fmt.Sprint(p.Schema.Value.Enum[0])
		}
	}
	return def
}
