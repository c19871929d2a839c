package scaffold

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// A body template is the scenario's endpoint.body: the JSON or form text a
// request sends, with {{placeholders}} the plan fills per intent. Values
// come from the schema (const, enum, example, default, bounds); a field
// whose name says what it is gets a placeholder, and each such choice is a
// guess, written down for the user.

var (
	tenantLike = regexp.MustCompile(`(?i)^(x-)?(tenant|account|merchant|organi[sz]ation|org|workspace|company|shop|store)(_?id)?$|(?i)-(account|tenant|merchant)(-id)?$`)
	// clientRef are ids the client makes up (a fresh one per intent);
	// idLike may as well name an existing resource.
	clientRef  = regexp.MustCompile(`(?i)(^reference$|_?ref(erence)?$|^external_?id$|^order_?number$|^idempotency|^client_?\w*_?id$|^request_?id$)`)
	idLike     = regexp.MustCompile(`(^id$|_id$|Id$|ID$)`)
	keyLike    = regexp.MustCompile(`(?i)^idempotency_?key$`)
	skuLike    = regexp.MustCompile(`(?i)^(sku|product(_?id)?|item(_?id)?|price(_?id)?|plan)$`)
	qtyLike    = regexp.MustCompile(`(?i)^(qty|quantity|count|units)$`)
	amountLike = regexp.MustCompile(`(?i)^(amount|total|value|price|sum)(_?(minor|cents|value))?$`)
)

// bodyGen generates one body and collects its guesses.
type bodyGen struct {
	guesses   []string
	varying   bool // some placeholder varies per intent
	hasTenant bool
	depth     int
}

func (g *bodyGen) guess(format string, args ...any) {
	g.guesses = append(g.guesses, fmt.Sprintf(format, args...))
}

// value is a generated value: raw JSON text (with placeholders spliced in
// unquoted where the placeholder is a number).
type value struct {
	json          string // JSON text, placeholders included
	form          string // the form-encoded scalar (placeholders unescaped); "" for containers
	kids          []field
	list          []value
	isObj, isList bool
}

type field struct {
	name string
	v    value
}

func scalar(jsonText, formText string) value { return value{json: jsonText, form: formText} }

func quoted(s string) value {
	b, _ := json.Marshal(s)
	return scalar(string(b), s)
}

// gen generates a value for schema s found at path (for the guesses).
func (g *bodyGen) gen(name, path string, ref *openapi3.SchemaRef) value {
	if ref == nil || ref.Value == nil {
		g.guess("%s: no schema; sent as a string", path)
		return quoted("x")
	}
	s := ref.Value
	if g.depth > 6 {
		return scalar("null", "")
	}
	g.depth++
	defer func() { g.depth-- }()
	if len(s.AllOf) > 0 {
		s = mergeAllOf(s)
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		alts := s.OneOf
		if len(alts) == 0 {
			alts = s.AnyOf
		}
		g.guess("%s: one of %d shapes; the first is sent", path, len(alts))
		return g.gen(name, path, alts[0])
	}
	if s.Const != nil {
		return literal(s.Const)
	}
	if len(s.Enum) > 0 {
		return literal(s.Enum[0])
	}
	typ := schemaType(s)
	switch typ {
	case "object":
		return g.object(path, s)
	case "array":
		item := g.gen(name, path+"[0]", s.Items)
		return value{isList: true, list: []value{item}}
	case "integer", "number":
		return g.number(name, path, s, typ == "integer")
	case "boolean":
		if b, ok := s.Default.(bool); ok {
			return literal(b)
		}
		return scalar("false", "false")
	}
	return g.str(name, path, s)
}

// schemaType is the schema's type, ignoring "null", inferred from its
// keywords when it names none.
func schemaType(s *openapi3.Schema) string {
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != "null" {
				return t
			}
		}
	}
	switch {
	case len(s.Properties) > 0:
		return "object"
	case s.Items != nil:
		return "array"
	case s.Min != nil || s.Max != nil:
		return "number"
	}
	return "string"
}

func mergeAllOf(s *openapi3.Schema) *openapi3.Schema {
	m := *s
	m.AllOf = nil
	m.Properties = openapi3.Schemas{}
	for k, v := range s.Properties {
		m.Properties[k] = v
	}
	for _, part := range s.AllOf {
		if part.Value == nil {
			continue
		}
		p := part.Value
		if len(p.AllOf) > 0 {
			p = mergeAllOf(p)
		}
		for k, v := range p.Properties {
			m.Properties[k] = v
		}
		m.Required = append(m.Required, p.Required...)
		if m.Type == nil && p.Type != nil {
			m.Type = p.Type
		}
	}
	return &m
}

// object sends the required properties (all of them when none is
// required: an empty object is rarely what the API wants), in the order
// the document lists them.
func (g *bodyGen) object(path string, s *openapi3.Schema) value {
	names := make([]string, 0, len(s.Properties))
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for n, p := range s.Properties {
		if p.Value != nil && p.Value.ReadOnly {
			continue
		}
		if len(required) == 0 || required[n] {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		li, lj := line(s.Properties[names[i]]), line(s.Properties[names[j]])
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	if len(required) > 0 && len(names) < len(s.Properties) {
		var skipped []string
		for n := range s.Properties {
			if !required[n] {
				skipped = append(skipped, n)
			}
		}
		sort.Strings(skipped)
		if len(skipped) > 0 && path != "" {
			g.guess("%s: only the required fields are sent (not %s)", path, strings.Join(skipped, ", "))
		} else if len(skipped) > 0 {
			g.guess("only the required fields are sent (not %s)", strings.Join(skipped, ", "))
		}
	}
	v := value{isObj: true}
	for _, n := range names {
		v.kids = append(v.kids, field{n, g.gen(n, join(path, n), s.Properties[n])})
	}
	return v
}

func line(r *openapi3.SchemaRef) int {
	if r == nil || r.Value == nil || r.Value.Origin == nil || r.Value.Origin.Key == nil {
		return math.MaxInt
	}
	return r.Value.Origin.Key.Line
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (g *bodyGen) number(name, path string, s *openapi3.Schema, integer bool) value {
	lo, hi := math.Inf(-1), math.Inf(1)
	if s.Min != nil {
		lo = *s.Min
	}
	if s.Max != nil {
		hi = *s.Max
	}
	// The plan draws {{qty}} from 1..5 and {{amount}} from 100..50000.
	switch {
	case qtyLike.MatchString(name) && lo <= 1 && hi >= 5:
		g.varying = true
		g.guess("%s: {{qty}} (1-5), from the name", path)
		return scalar("{{qty}}", "{{qty}}")
	case amountLike.MatchString(name) && lo <= 100 && hi >= 50000:
		g.varying = true
		g.guess("%s: {{amount}} (100-50000, minor units), from the name", path)
		return scalar("{{amount}}", "{{amount}}")
	}
	for _, ex := range []any{s.Example, s.Default} {
		if ex != nil {
			return literal(ex)
		}
	}
	n := 1.0
	switch {
	case lo > n:
		n = math.Ceil(lo)
	case hi < n:
		n = math.Floor(hi)
	}
	t := strconv.FormatFloat(n, 'f', -1, 64)
	return scalar(t, t)
}

func (g *bodyGen) str(name, path string, s *openapi3.Schema) value {
	switch {
	case tenantLike.MatchString(name):
		g.varying, g.hasTenant = true, true
		g.guess("%s: {{tenant}}: the name looks like the tenant (check that it is, and that the service accepts the tenant names t1, t2...)", path)
		return scalar(`"{{tenant}}"`, "{{tenant}}")
	case keyLike.MatchString(name):
		g.varying = true
		g.guess("%s: {{key}}, the attempt's idempotency key: the name says the body carries it", path)
		return scalar(`"{{key}}"`, "{{key}}")
	case clientRef.MatchString(name) || s.Format == "uuid" && s.Example == nil:
		g.varying = true
		what := "the name says the client makes it up"
		if !clientRef.MatchString(name) {
			what = "format uuid; {{uuid}} is 16 hex digits, not a UUID: adjust if the service checks the format"
		}
		g.guess("%s: {{uuid}}, a fresh value per intent: %s", path, what)
		return scalar(`"{{uuid}}"`, "{{uuid}}")
	case idLike.MatchString(name) && s.Example == nil && s.Default == nil:
		g.varying = true
		g.guess("%s: {{uuid}}, a fresh value per intent: no example given; if it must name an existing resource, put one here", path)
		return scalar(`"{{uuid}}"`, "{{uuid}}")
	case idLike.MatchString(name):
		g.guess("%s: the document's example, the same in every intent: it may have to name a resource that exists in your service", path)
	case skuLike.MatchString(name) && (s.MinLength <= 5) && s.Pattern == "":
		g.varying = true
		g.guess("%s: {{sku}} (A-100, B-200, ...), from the name", path)
		return scalar(`"{{sku}}"`, "{{sku}}")
	}
	for _, ex := range append([]any{s.Example, s.Default}, s.Examples...) {
		if ex != nil {
			return literal(ex)
		}
	}
	switch s.Format {
	case "date-time":
		return quoted("2026-01-01T00:00:00Z")
	case "date":
		return quoted("2026-01-01")
	case "email":
		return quoted("buyer@example.com")
	case "uri", "url":
		return quoted("https://example.com/")
	}
	if strings.EqualFold(name, "currency") {
		g.guess("%s: \"usd\", from the name", path)
		return quoted("usd")
	}
	v := "idemchaos-{{n}}"
	g.varying = true
	if s.Pattern != "" {
		g.guess("%s: must match %s; no example given, %q sent: replace it with a valid value", path, s.Pattern, v)
	}
	if s.MaxLength != nil && *s.MaxLength < uint64(len(v)) {
		v = strings.Repeat("x", int(max(s.MinLength, 1)))
		g.guess("%s: no example given; %q sent", path, v)
	}
	return scalar(strconv.Quote(v), v)
}

// literal is a value the document gave (const, enum, example, default).
func literal(x any) value {
	b, err := json.Marshal(x)
	if err != nil {
		return quoted(fmt.Sprint(x))
	}
	switch t := x.(type) {
	case string:
		return scalar(string(b), t)
	case map[string]any:
		v := value{isObj: true}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v.kids = append(v.kids, field{k, literal(t[k])})
		}
		return v
	case []any:
		v := value{isList: true}
		for _, e := range t {
			v.list = append(v.list, literal(e))
		}
		return v
	}
	return scalar(string(b), string(b))
}

// JSON renders v as compact JSON text.
func (v value) JSON() string {
	var b strings.Builder
	v.writeJSON(&b)
	return b.String()
}

func (v value) writeJSON(b *strings.Builder) {
	switch {
	case v.isObj:
		b.WriteByte('{')
		for i, f := range v.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(f.name)
			b.Write(k)
			b.WriteByte(':')
			f.v.writeJSON(b)
		}
		b.WriteByte('}')
	case v.isList:
		b.WriteByte('[')
		for i, e := range v.list {
			if i > 0 {
				b.WriteByte(',')
			}
			e.writeJSON(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.json)
	}
}

// Form renders v as application/x-www-form-urlencoded text, nesting the
// way Rails, PHP and Stripe do (a[b]=1&a[c][0]=2). Placeholders are left
// unescaped: the values the plan puts there need no escaping.
func (v value) Form() string {
	var parts []string
	var walk func(prefix string, v value)
	walk = func(prefix string, v value) {
		switch {
		case v.isObj:
			for _, f := range v.kids {
				k := f.name
				if prefix != "" {
					k = prefix + "[" + f.name + "]"
				}
				walk(k, f.v)
			}
		case v.isList:
			for i, e := range v.list {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		default:
			parts = append(parts, escapeForm(prefix)+"="+escapeForm(v.form))
		}
	}
	walk("", v)
	return strings.Join(parts, "&")
}

// escapeForm escapes s for a form, keeping {{placeholders}} and brackets
// readable.
func escapeForm(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(escapeKeepBrackets(s))
			break
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			b.WriteString(escapeKeepBrackets(s))
			break
		}
		b.WriteString(escapeKeepBrackets(s[:i]))
		b.WriteString(s[i : i+j+2])
		s = s[i+j+2:]
	}
	return b.String()
}

func escapeKeepBrackets(s string) string {
	e := url.QueryEscape(s)
	return strings.NewReplacer("%5B", "[", "%5D", "]").Replace(e)
}
