package driver

import (
	"net/http"
	"net/url"
	"strings"
)

// Where a [Template] puts the tenant besides its placeholders.
const (
	TenantInToken  = "token"  // Authorization: Bearer Config.Tokens[tenant]
	TenantInHeader = "header" // a header named Template.TenantName
	TenantInQuery  = "query"  // a query parameter named Template.TenantName
)

// Template is the request every intent sends. It is rendered for every
// attempt from that attempt's final intent, tenant and key, so that a
// request never contradicts its sender: a tenant or key decided after the
// values were drawn (a shared or reused key, a new key per retry) is the
// one the path, headers and body carry.
type Template struct {
	// Path may hold a query string; placeholders are URL-escaped.
	Path string
	// Headers are sent on every request; their values may hold placeholders.
	Headers map[string]string
	// Body is the body template.
	Body string
	// TenantIn and TenantName put the tenant in a header or a query
	// parameter besides the placeholders (token, path and body need no more).
	TenantIn   string
	TenantName string
	_          struct{}
}

// Rendered is one attempt's request as sent.
type Rendered struct {
	Path    string
	Headers map[string]string
	Body    []byte
	// fromTemplate says Headers are the template's own, the same for
	// every attempt (the driver prepares them once).
	fromTemplate bool
}

// Render builds the request of an attempt of in carrying key. An intent
// without Vars (callbacks, saved plans of older versions) is sent as
// written: its Path and Body, the template's headers untouched.
func (t *Template) Render(in *Intent, key string) Rendered {
	if in.Vars == nil {
		return Rendered{Path: in.Path, Headers: t.Headers, Body: in.Body, fromTemplate: true}
	}
	vals := make([]string, 0, 2*(len(in.Vars)+3))
	for k, v := range in.Vars {
		vals = append(vals, "{{"+k+"}}", v)
	}
	vals = append(vals, "{{intent}}", in.ID, "{{tenant}}", in.Tenant, "{{key}}", key)
	plain := strings.NewReplacer(vals...)
	r := Rendered{Body: ApplyVariant(in.Variant, []byte(plain.Replace(t.Body)))}

	p, q, hasQuery := strings.Cut(t.Path, "?")
	r.Path = escaped(vals, url.PathEscape).Replace(p)
	if hasQuery {
		q = escaped(vals, url.QueryEscape).Replace(q)
	}
	if t.TenantIn == TenantInQuery {
		if q != "" {
			q += "&"
		}
		q += url.QueryEscape(t.TenantName) + "=" + url.QueryEscape(in.Tenant)
	}
	if q != "" {
		r.Path += "?" + q
	}
	r.Headers = make(map[string]string, len(t.Headers)+1)
	for name, v := range t.Headers {
		r.Headers[name] = plain.Replace(v)
	}
	if t.TenantIn == TenantInHeader {
		r.Headers[http.CanonicalHeaderKey(t.TenantName)] = in.Tenant
	}
	return r
}

// escaped is a replacer whose values are escaped with esc.
func escaped(vals []string, esc func(string) string) *strings.Replacer {
	out := make([]string, len(vals))
	for i, v := range vals {
		if i%2 == 1 {
			v = esc(v)
		}
		out[i] = v
	}
	return strings.NewReplacer(out...)
}
