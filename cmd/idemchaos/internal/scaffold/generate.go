package scaffold

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// File is one generated scenario file.
type File struct {
	// Name is the file name (no directory), e.g. create-order.yaml.
	Name string
	// Operation is the operation it tests ("createOrder" or "POST /path").
	Operation string
	// Text is the YAML, comments included.
	Text string
	// Target is the scenario's target URL (the document's loopback server,
	// or a placeholder the user must point at their service).
	Target string
	// Notes are what the user must know that the file cannot express
	// (printed by the CLI as well as written into the file).
	Notes []string
}

// defaultTarget is where a scenario points when the document's server is
// not on this machine: idemchaos sends traffic only to loopback unless told.
const defaultTarget = "http://127.0.0.1:8080"

// Generate writes, for every selected operation, a scenario of faults that
// need nothing but HTTP (<name>.yaml: runnable at once) and one of faults
// that need control of the service's processes or database
// (<name>-infra.yaml: its hooks must be filled in first).
func Generate(doc *Document, opts Options) ([]File, error) {
	if opts.KeyHeader == "" {
		opts.KeyHeader = "Idempotency-Key"
	}
	if opts.Source == "" {
		opts.Source = filepath.Base(doc.File)
	}
	ops, err := selectOperations(doc.T, opts)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, o := range ops {
		if i := strings.IndexFunc(o.path, unicode.IsControl); i >= 0 {
			// A path key of the document may hold any string; a request
			// path holds no raw control character, and a scenario written
			// with one would not load.
			return nil, fmt.Errorf("%s: path %q has a control character (U+%04X) at byte %d: an OpenAPI path is a URL path; percent-encode it in the document", o.id(), o.path, []rune(o.path[i:])[0], i)
		}
		sc, err := newScaffold(doc.T, o, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.id(), err)
		}
		out = append(out, sc.main(), sc.infra())
	}
	return out, nil
}

// scaffold is everything inferred about one operation.
type scaffold struct {
	t           *openapi3.T
	o           *operation
	opts        Options
	name        string
	target      string
	targetWhy   string
	path        string
	pathNotes   []string
	keyHeader   string
	keyWhy      string
	headers     [][2]string // name, value
	headerWhy   map[string]string
	body        string
	bodyGuesses []string
	varying     bool
	bodyTenant  bool // the body carries {{tenant}}
	ten         tenancy
	con         contract
	callback    *callbackOp
	notes       []string
	hasBody     bool // the operation documents a request body
}

func newScaffold(t *openapi3.T, o *operation, opts Options) (*scaffold, error) {
	s := &scaffold{t: t, o: o, opts: opts, name: slug(o), headerWhy: map[string]string{}}
	s.ten = findTenancy(t, o, opts)
	s.findTarget()
	s.findPath()
	s.keyHeader = opts.KeyHeader
	req := keyRequired(o)
	switch {
	case o.keyParam != nil && req:
		s.keyHeader = o.keyParam.Name
		s.keyWhy = "declared by the operation, required"
	case o.keyParam != nil:
		s.keyHeader = o.keyParam.Name
		s.keyWhy = "declared by the operation, optional"
	default:
		s.keyWhy = "guess: the operation declares no key header; this is the header idemchaos sends (--key-header)"
	}
	s.con = readContract(o, s.keyHeader, req)
	s.findBody()
	s.findHeaders()
	s.callback = findCallback(t, o)
	if s.ten.in == "none" && s.bodyTenant {
		s.ten = tenancy{in: "body", multi: true, why: "guess: the operation names no credential, and the body has a tenant-like field"}
	}
	if n := s.tenantNote(); n != "" {
		s.notes = append(s.notes, n)
	}
	return s, nil
}

// findTarget takes the first server when it is on this machine.
func (s *scaffold) findTarget() {
	s.target, s.targetWhy = defaultTarget, "guess: the document names no server; point this at your service or pass --target"
	if len(s.t.Servers) == 0 {
		return
	}
	raw := s.t.Servers[0].URL
	for name, v := range s.t.Servers[0].Variables {
		raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		s.targetWhy = fmt.Sprintf("guess: the document's server %q is not an absolute URL; point this at your service or pass --target", raw)
		return
	}
	prefix := strings.TrimRight(u.Path, "/")
	s.path = prefix
	// Only a choice of default: the loader applies the loopback rule to
	// what is written, and run resolves "localhost" and refuses it if it
	// leads off the machine.
	if ip := net.ParseIP(u.Hostname()); !strings.EqualFold(u.Hostname(), "localhost") && (ip == nil || !ip.IsLoopback()) {
		s.targetWhy = fmt.Sprintf("the document's server is %s://%s, not this machine: idemchaos sends faults and load only to loopback; run a copy of the service here (or pass --target)", u.Scheme, u.Host)
		return
	}
	s.target = u.Scheme + "://" + u.Host
	s.targetWhy = "the document's first server"
}

var pathParam = regexp.MustCompile(`\{([^{}]+)\}`)

// findPath fills the path's parameters with example values: a scenario
// sends one path.
func (s *scaffold) findPath() {
	p := pathParam.ReplaceAllStringFunc(s.o.path, func(m string) string {
		name := m[1 : len(m)-1]
		if s.ten.in == "path" && name == s.ten.name {
			return "{{tenant}}"
		}
		v := "1"
		if prm := s.o.param("path", name); prm != nil {
			v = exampleOf(prm, "1")
		}
		s.pathNotes = append(s.pathNotes, fmt.Sprintf("guess: {%s} = %s, the document's example (or a placeholder value): every intent uses this one path", name, v))
		return url.PathEscape(v)
	})
	s.path += p
}

// findBody generates the request body from the first media type a
// scenario can send: JSON, then a form.
func (s *scaffold) findBody() {
	rb := s.o.op.RequestBody
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		s.body = ""
		s.headers = append(s.headers, [2]string{"Content-Type", "application/json"})
		s.bodyGuesses = append(s.bodyGuesses, "the operation documents no request body: an empty JSON object is sent")
		s.body = "{}"
		return
	}
	s.hasBody = true
	var types []string
	for mt := range rb.Value.Content {
		types = append(types, mt)
	}
	slices.Sort(types)
	pick := ""
	for _, want := range []func(string) bool{
		func(mt string) bool { return mt == "application/json" },
		func(mt string) bool { return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "/json") },
		func(mt string) bool { return mt == "application/x-www-form-urlencoded" },
	} {
		for _, mt := range types {
			if pick == "" && want(mt) {
				pick = mt
			}
		}
	}
	if pick == "" {
		pick = types[0]
		s.bodyGuesses = append(s.bodyGuesses, fmt.Sprintf("%s is neither JSON nor a form: a JSON rendering of the schema is sent; replace it", pick))
	}
	g := &bodyGen{}
	v := g.gen("", "", rb.Value.Content[pick].Schema)
	if pick == "application/x-www-form-urlencoded" {
		s.body = v.Form()
	} else {
		s.body = v.JSON()
	}
	s.headers = append(s.headers, [2]string{"Content-Type", pick})
	s.headerWhy["Content-Type"] = "the request body's media type"
	if len(types) > 1 {
		s.headerWhy["Content-Type"] += fmt.Sprintf(" (of %s)", strings.Join(types, ", "))
	}
	s.bodyGuesses = append(s.bodyGuesses, g.guesses...)
	s.varying = g.varying
	s.bodyTenant = g.hasTenant
	if !g.varying {
		s.bodyGuesses = append(s.bodyGuesses, "nothing in the body varies per intent: the key-reuse step needs two bodies, so it is left out; add a placeholder where the schema allows one")
	}
}

// findHeaders adds the required header parameters besides the key: a
// request the service refuses for a missing header tests nothing.
func (s *scaffold) findHeaders() {
	for _, p := range s.o.params {
		v := p.Value
		if v == nil || v.In != "header" || strings.EqualFold(v.Name, s.keyHeader) || strings.EqualFold(v.Name, "Authorization") ||
			strings.EqualFold(v.Name, "Content-Type") {
			continue
		}
		if s.ten.in == "header" && strings.EqualFold(v.Name, s.ten.name) {
			continue // endpoint.tenant sends it, per tenant
		}
		if !v.Required {
			continue
		}
		val := exampleOf(v, "")
		why := "a required header; the document's example"
		if val == "" {
			val = "TODO"
			why = "a required header the document gives no example for: fill it in"
		}
		s.headers = append(s.headers, [2]string{v.Name, val})
		s.headerWhy[v.Name] = why
	}
	for _, name := range apiKeyHeaders(s.t, s.o) {
		s.headers = append(s.headers, [2]string{name, "TODO-api-key"})
		s.headerWhy[name] = "the API key (security scheme): fill in a test key"
	}
}

// apiKeyHeaders are the header names of the API-key security schemes the
// operation uses (besides Authorization, which carries the tenants' tokens).
func apiKeyHeaders(t *openapi3.T, o *operation) []string {
	reqs := t.Security
	if o.op.Security != nil {
		reqs = *o.op.Security
	}
	var out []string
	for _, req := range reqs {
		for n := range req {
			if t.Components == nil || t.Components.SecuritySchemes[n] == nil || t.Components.SecuritySchemes[n].Value == nil {
				continue
			}
			sc := t.Components.SecuritySchemes[n].Value
			if sc.Type == "apiKey" && sc.In == "header" && !strings.EqualFold(sc.Name, "Authorization") && !slices.Contains(out, sc.Name) {
				out = append(out, sc.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// tenantNote says what the current scenario format cannot express about
// the tenant, so the user knows the run covers one tenant.
func (s *scaffold) tenantNote() string {
	switch s.ten.in {
	case "apikey":
		return fmt.Sprintf("the tenant is the API key %q; this version's scenarios send tenants as bearer tokens only, so every intent uses the one key in endpoint.headers and the cross-tenant step is left out", s.ten.name)
	case "basic":
		return "the tenant is an HTTP basic-auth user; this version's scenarios send tenants as bearer tokens only: add an Authorization: Basic header in endpoint.headers for one tenant"
	}
	return ""
}

// callbackOp is a payment-provider callback operation the document has
// next to the create operation.
type callbackOp struct {
	path string
	why  string
}

// findCallback looks for a provider-callback operation whose body has the
// shape idemchaos's callbacks step sends ({provider_tx, order_id, status,
// amount}): only then can the step exercise it.
func findCallback(t *openapi3.T, o *operation) *callbackOp {
	for _, p := range t.Paths.Keys() {
		if p == o.path || !regexp.MustCompile(`(?i)callback|webhook|notif`).MatchString(p) {
			continue
		}
		op := t.Paths.Value(p).Post
		if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
			continue
		}
		mt := op.RequestBody.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			continue
		}
		props := mt.Schema.Value.Properties
		if props["provider_tx"] != nil && props["order_id"] != nil && props["status"] != nil {
			return &callbackOp{path: p, why: fmt.Sprintf("guess: POST %s takes {provider_tx, order_id, status}, the payment-provider callback idemchaos knows how to send", p)}
		}
	}
	return nil
}
