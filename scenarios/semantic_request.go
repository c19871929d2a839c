package scenarios

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/theory/jsonpath"

	"github.com/idemchaos/idemchaos/internal/suggest"
)

// checkRequest checks what a request is built from beyond the body: the
// placeholders of the path and header values, and where the tenant goes.
func (t *tree) checkRequest() {
	t.checkPlaceholders("/endpoint/path")
	if hs, ok := t.get("/endpoint/headers"); ok {
		if m, ok := hs.(map[string]any); ok {
			for name := range m {
				t.checkPlaceholders(ptr("/endpoint/headers", name))
			}
		}
	}
	in, set := t.str("/endpoint/tenant/in")
	if !set {
		in = TenantInToken
	}
	tp := "/endpoint/tenant"
	if t.has(tp+"/name") && in != TenantInHeader && in != TenantInQuery {
		t.errorf(t.keyPos(tp+"/name"), "endpoint.tenant.name: only used with in: header or in: query (in: %s)", in)
	}
	if name, ok := t.str(tp + "/name"); ok && in == TenantInHeader {
		switch {
		case strings.EqualFold(name, "Authorization"):
			t.errorf(t.posOf(tp+"/name"), "endpoint.tenant.name: Authorization carries the tokens; use in: token, or another header")
		case strings.EqualFold(name, valueOrDefault(t, "/endpoint/key_header", defaultKeyHeader)):
			t.errorf(t.posOf(tp+"/name"), "endpoint.tenant.name: %q is the idempotency key header", name)
		}
	}
	for _, w := range []struct{ in, field string }{{TenantInBody, "body"}, {TenantInPath, "path"}} {
		if in != w.in {
			continue
		}
		tmpl, ok := t.str("/endpoint/" + w.field)
		if !ok {
			tmpl = map[string]string{"body": defaultBody, "path": defaultPath}[w.field]
		}
		if !strings.Contains(tmpl, "{{tenant}}") {
			t.errorf(t.posOf(tp+"/in"), "endpoint.tenant.in: %s, but endpoint.%s has no {{tenant}} placeholder to carry it", in, w.field)
		}
	}
	if set && in != TenantInToken && t.has("/target/reference") {
		t.errorf(t.posOf(tp+"/in"), "endpoint.tenant.in: the reference service tells tenants by their bearer token; only in: token works with it")
	}
}

func valueOrDefault(t *tree, p, def string) string {
	if s, ok := t.str(p); ok {
		return s
	}
	return def
}

// checkPlaceholders reports unknown {{...}} placeholders in the template at p.
func (t *tree) checkPlaceholders(p string) {
	s, ok := t.str(p)
	if !ok {
		return
	}
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(placeholders, m[1]) || m[0] != "{{"+m[1]+"}}" {
			hint := ""
			if s := suggest.Closest(m[1], placeholders); s != "" {
				hint = "; did you mean {{" + s + "}}?"
			}
			t.errorf(t.posOf(p), "%s: unknown placeholder %s%s (known: {{%s}})", t.where(p), m[0], hint, strings.Join(placeholders, "}}, {{"))
		}
	}
}

// jsonPathFields are the effects fields that hold JSONPath expressions.
var jsonPathFields = []string{"items", "tenant", "key", "id", "next", "response_id", "state", "written_at", "resource"}

// oraclePlaceholders are what the http oracle renders per tenant.
var oraclePlaceholders = []string{"tenant", "token"}

// checkEffectPlaceholders checks the placeholders of the http oracle's URL
// and header values: each is rendered per tenant or refused here, never
// sent as written. It says whether any is used (the listing is then read
// once per tenant).
func (t *tree) checkEffectPlaceholders() bool {
	var fields []string
	if t.has("/effects/url") {
		fields = append(fields, "/effects/url")
	}
	if hs, ok := t.get("/effects/headers"); ok {
		if m, ok := hs.(map[string]any); ok {
			names := make([]string, 0, len(m))
			for name := range m {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				fields = append(fields, ptr("/effects/headers", name))
			}
		}
	}
	used, token := false, ""
	for _, p := range fields {
		s, _ := t.str(p)
		for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(oraclePlaceholders, m[1]) || m[0] != "{{"+m[1]+"}}" {
				hint := ""
				if s := suggest.Closest(m[1], oraclePlaceholders); s != "" {
					hint = "; did you mean {{" + s + "}}?"
				}
				t.errorf(t.posOf(p), "%s: %s is not a placeholder the oracle renders (it reads once per tenant and fills {{tenant}} and {{token}}, the tenant's bearer token)%s", t.where(p), m[0], hint)
				continue
			}
			used = true
			if m[1] == "token" && token == "" {
				token = p
			}
		}
	}
	if in, _ := t.str("/endpoint/tenant/in"); token != "" && in != "" && in != TenantInToken && !t.has("/endpoint/tokens") {
		t.errorf(t.posOf(token), "%s: {{token}} is the tenant's bearer token, and endpoint.tokens names none (tenant.in is %s); list them", t.where(token), in)
	}
	return used
}

// checkEffectPaths parses the oracle's JSONPath expressions (RFC 9535) as
// the run will, so that a bad one fails here and not after the traffic.
func (t *tree) checkEffectPaths() {
	for _, f := range jsonPathFields {
		p := "/effects/" + f
		s, ok := t.str(p)
		if !ok {
			continue
		}
		if _, err := jsonpath.Parse(s); err != nil {
			t.wrapf(t.posOf(p), err, "effects.%s: %q is not a JSONPath (RFC 9535) expression: %s", f, s, strings.TrimPrefix(err.Error(), "jsonpath: "))
		}
	}
	if t.has("/effects/response_id") {
		oracle, _ := t.str("/effects/oracle")
		if oracle != "sql" && oracle != "http" {
			t.errorf(t.keyPos("/effects/response_id"), "effects.response_id: used with oracle sql or http (the reference knows every effect's intent)")
		}
	}
	if fp, ok := t.str("/contract/fingerprint"); ok && fp != "" {
		if ct := contentType(t); ct != "" && !strings.Contains(strings.ToLower(ct), "json") {
			t.errorf(t.posOf("/contract/fingerprint"), "contract.fingerprint: the probe re-serialises JSON bodies, but Content-Type is %q", ct)
		}
	}
}

func contentType(t *tree) string {
	hs, _ := t.get("/endpoint/headers")
	m, _ := hs.(map[string]any)
	for k, v := range m {
		if http.CanonicalHeaderKey(k) == "Content-Type" {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// checkRetyped refuses a type-only rate without reuses to apply it to.
func (t *tree) checkRetyped() {
	check := func(p, base string) {
		if !t.has(p + "/retyped") {
			return
		}
		reuse, ok := t.get(p + "/reuse")
		if !ok {
			reuse, _ = t.get(base + "/reuse")
		}
		if r, _ := asFloat(reuse); r == 0 {
			if v, _ := asFloat(valueOr(t.get(p + "/retyped"))); v > 0 {
				t.errorf(t.posOf(p+"/retyped"), "%s.retyped: applies to reuse intents, and %s.reuse is 0", t.where(p), t.where(p))
			}
		}
	}
	check("/traffic", "/traffic")
	list, _ := t.get("/steps")
	items, _ := list.([]any)
	for i := range items {
		check(ptr("/steps", strconv.Itoa(i), "traffic"), "/traffic")
	}
}
