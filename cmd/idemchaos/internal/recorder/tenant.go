package recorder

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/scenarios"
)

// ScenarioTenant reads a request's tenant the way the scenario's run sends
// it (endpoint.tenant): the bearer token through endpoint.tokens (tenant →
// token), a header, a query parameter, the path segment where the path
// template has {{tenant}}, or the body field whose template value is
// {{tenant}} (JSON or form). A request it cannot place falls back to
// [DefaultTenant].
func ScenarioTenant(e scenarios.Endpoint) func(*http.Request, []byte) string {
	byToken := make(map[string]string, len(e.Tokens))
	for tenant, tok := range e.Tokens {
		byToken[tok] = tenant
	}
	fromToken := func(r *http.Request, body []byte) string {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if t, ok := byToken[tok]; ok {
				return t
			}
		}
		return DefaultTenant(r, body)
	}
	var read func(*http.Request, []byte) string
	switch e.Tenant.In {
	case scenarios.TenantInHeader:
		read = func(r *http.Request, _ []byte) string { return r.Header.Get(e.Tenant.Name) }
	case scenarios.TenantInQuery:
		read = func(r *http.Request, _ []byte) string { return r.URL.Query().Get(e.Tenant.Name) }
	case scenarios.TenantInPath:
		re := pathPattern(e.Path)
		read = func(r *http.Request, _ []byte) string {
			if m := re.FindStringSubmatch(r.URL.EscapedPath()); m != nil {
				v, err := url.PathUnescape(m[1])
				if err == nil {
					return v
				}
			}
			return ""
		}
	case scenarios.TenantInBody:
		field := bodyField(e.Body)
		read = func(r *http.Request, body []byte) string { return field(r.Header.Get("Content-Type"), body) }
	default:
		return fromToken
	}
	return func(r *http.Request, body []byte) string {
		if t := read(r, body); t != "" {
			return t
		}
		return fromToken(r, body)
	}
}

var placeholder = regexp.MustCompile(`\{\{\s*[a-z]+\s*\}\}`)

// pathPattern matches a path template, capturing where {{tenant}} is; the
// other placeholders match one segment.
func pathPattern(tmpl string) *regexp.Regexp {
	if i := strings.IndexByte(tmpl, '?'); i >= 0 {
		tmpl = tmpl[:i]
	}
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:loc[0]]))
		if strings.Contains(tmpl[loc[0]:loc[1]], "tenant") {
			b.WriteString("([^/]+)")
		} else {
			b.WriteString("(?:[^/]+)")
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// bodyField finds where the body template puts {{tenant}} — a JSON field
// (at any depth) or a form key — and returns a reader of that field.
func bodyField(tmpl string) func(contentType string, body []byte) string {
	// Placeholders outside strings ({{amount}}) would not parse: fill them.
	filled := placeholder.ReplaceAllStringFunc(tmpl, func(p string) string {
		if strings.Contains(p, "tenant") {
			return "@@idemchaos-tenant@@"
		}
		return "0"
	})
	var path []string
	var v any
	if json.Unmarshal([]byte(filled), &v) == nil && find(v, &path) {
		return func(_ string, body []byte) string {
			var b any
			if json.Unmarshal(body, &b) != nil {
				return ""
			}
			for _, k := range path {
				m, ok := b.(map[string]any)
				if !ok {
					return ""
				}
				b = m[k]
			}
			s, _ := b.(string)
			return s
		}
	}
	if vals, err := url.ParseQuery(filled); err == nil {
		for k, vs := range vals {
			if len(vs) == 1 && vs[0] == "@@idemchaos-tenant@@" {
				return func(_ string, body []byte) string {
					q, _ := url.ParseQuery(string(body))
					return q.Get(k)
				}
			}
		}
	}
	return func(string, []byte) string { return "" }
}

// find looks for the tenant marker in a parsed JSON template, recording
// the object keys that lead to it.
func find(v any, path *[]string) bool {
	switch t := v.(type) {
	case string:
		return t == "@@idemchaos-tenant@@"
	case map[string]any:
		for k, e := range t {
			*path = append(*path, k)
			if find(e, path) {
				return true
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	return false
}

// ScenarioContract is the contract a scenario's run is judged by, as a
// history's meta line carries it: its status codes and fingerprint, and
// eventually-decided's bound when the scenario sets one.
func ScenarioContract(s *scenarios.Scenario) *history.Contract {
	c := &history.Contract{Profile: s.Contract.Profile, MissingKey: s.Contract.MissingKey, Reuse: s.Contract.Reuse,
		InFlight: s.Contract.InFlight, Fingerprint: s.Contract.Fingerprint}
	for _, inv := range s.Invariants {
		if inv.Name == "eventually-decided" && inv.Bound > 0 {
			c.DecisionBoundMS = inv.Bound.Milliseconds()
		}
		if inv.Name == "replay-identical" && len(inv.Headers) > 0 {
			c.ReplayHeaders = inv.Headers
		}
	}
	return c
}
