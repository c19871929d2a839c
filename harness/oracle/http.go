package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/theory/jsonpath"

	"github.com/idemchaos/idemchaos/history"
)

// HTTPConfig says what the http oracle reads.
type HTTPConfig struct {
	// URL is a GET endpoint returning JSON. It may name {{tenant}} and
	// {{token}} (the tenant's bearer token): then it is read once per
	// tenant of Tenants, each placeholder URL-escaped where it stands, and
	// the reads are merged.
	URL string
	// Headers are sent with every read; their values may name {{tenant}}
	// and {{token}} too ("Authorization: Bearer {{token}}").
	Headers map[string]string
	// Items, Tenant, Key and ID are JSONPath expressions (RFC 9535,
	// github.com/theory/jsonpath): Items selects the effects
	// ("$.effects[*]", "$[*]" for a top-level array,
	// "$.effects[?@.kind=='order']"; one array selected means its
	// elements), the others one value of each item ("$.tenant",
	// "$.order.id"). Tenant may be empty on a read per tenant: the items
	// are that tenant's.
	Items, Tenant, Key, ID string
	// State, WrittenAt and Resource are optional JSONPath expressions of an
	// item: the state its resource is in ("$.status"), when that state
	// was written (an RFC 3339 time or Unix seconds, "$.updated_at") and
	// which resource it is ("$.payment"; default the effect's id), for
	// forward-only.
	State, WrittenAt, Resource string
	// Next is a JSONPath selecting, on each page, where the next page is:
	// a URL (absolute, or relative to the page) or, with Cursor, a cursor.
	// Nothing selected, null, "" or false ends the listing.
	Next string
	// Cursor is the query parameter the cursor Next selects is sent back
	// in, on the first page's URL.
	Cursor string
	// Tenants are the tenants a URL or header with placeholders is read
	// for.
	Tenants []Tenant

	_ struct{}
}

// Tenant is one tenant a per-tenant read is made for.
type Tenant struct {
	// Name fills {{tenant}}; Token fills {{token}}.
	Name, Token string
}

// maxPages bounds one listing: a next link that never ends is an error,
// not a hang.
const maxPages = 10000

// HTTP returns an oracle that GETs the listing c describes (every page of
// it, for every tenant it names) and picks effects out of the JSON. Its
// requests go through the [Net] of [Through] (default: loopback only),
// every redirect hop included.
func HTTP(c HTTPConfig, opts ...Option) Oracle {
	n := netFor("effects.url", opts)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: n.DialContext}, Timeout: 30 * time.Second}
	if r, ok := n.(redirector); ok {
		client.CheckRedirect = r.CheckRedirect
	}
	return httpOracle{c: c, client: client}
}

type httpOracle struct {
	c      HTTPConfig
	client *http.Client
}

// placeholderRE matches the placeholders a read renders.
var placeholderRE = regexp.MustCompile(`\{\{\s*(tenant|token)\s*\}\}`)

// PerTenant says whether an http oracle with that URL and those headers is
// read once per tenant: either names {{tenant}} or {{token}}.
func PerTenant(url string, headers map[string]string) bool {
	if placeholderRE.MatchString(url) {
		return true
	}
	for _, v := range headers {
		if placeholderRE.MatchString(v) {
			return true
		}
	}
	return false
}

// read is one tenant's (or the one) read of the listing.
type read struct {
	url     string
	headers map[string]string
	tenant  string // "" when the read is not per tenant
}

func (o httpOracle) reads() ([]read, error) {
	if !PerTenant(o.c.URL, o.c.Headers) {
		return []read{{url: o.c.URL, headers: o.c.Headers}}, nil
	}
	if len(o.c.Tenants) == 0 {
		return nil, errors.New("effects.url or effects.headers name {{tenant}} or {{token}}, and there are no tenants to read for")
	}
	out := make([]read, 0, len(o.c.Tenants))
	for _, tn := range o.c.Tenants {
		r := read{url: renderURL(o.c.URL, tn), tenant: tn.Name, headers: make(map[string]string, len(o.c.Headers))}
		for k, v := range o.c.Headers {
			r.headers[k] = render(v, tn, func(s string) string { return s })
		}
		out = append(out, r)
	}
	return out, nil
}

// render fills the placeholders of s for tn, escaped by esc.
func render(s string, tn Tenant, esc func(string) string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if placeholderRE.FindStringSubmatch(m)[1] == "token" {
			return esc(tn.Token)
		}
		return esc(tn.Name)
	})
}

// renderURL fills a URL's placeholders: path-escaped before the '?',
// query-escaped after it.
func renderURL(u string, tn Tenant) string {
	path, query, hasQuery := strings.Cut(u, "?")
	out := render(path, tn, url.PathEscape)
	if hasQuery {
		out += "?" + render(query, tn, url.QueryEscape)
	}
	return out
}

func (o httpOracle) Effects(ctx context.Context) ([]history.Effect, error) {
	r, err := o.read(ctx)
	return r.Effects, err
}

// read reads every listing (one per tenant, or the one) to its last page.
// When none yields an effect it says where it read — the URL as written,
// placeholders and all, so no token is quoted — and what the last page
// said.
func (o httpOracle) read(ctx context.Context) (Reading, error) {
	r := Reading{Source: "GET " + o.c.URL}
	paths := map[string]*jsonpath.Path{}
	for _, expr := range []string{o.c.Items, o.c.Tenant, o.c.Key, o.c.ID, o.c.Next, o.c.State, o.c.WrittenAt, o.c.Resource} {
		if expr == "" {
			continue
		}
		p, err := jsonpath.Parse(expr)
		if err != nil {
			return r, fmt.Errorf("%w: %q: %w", ErrOracle, expr, err)
		}
		paths[expr] = p
	}
	reads, err := o.reads()
	if err != nil {
		return r, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	if PerTenant(o.c.URL, o.c.Headers) {
		r.Source = fmt.Sprintf("GET %s once per tenant (%d)", o.c.URL, len(reads))
	}
	var last page
	for _, rd := range reads {
		fx, lp, err := o.list(ctx, rd, paths)
		if err != nil {
			return r, fmt.Errorf("%w: %w", ErrOracle, err)
		}
		r.Effects = append(r.Effects, fx...)
		last = lp
	}
	if len(r.Effects) == 0 {
		r.Got = strconv.Itoa(last.status) + " " + clip(strings.Join(strings.Fields(string(last.body)), " "), maxGot)
	}
	return r, nil
}

// list reads every page of one read's listing, and returns its effects and
// its last page.
func (o httpOracle) list(ctx context.Context, r read, paths map[string]*jsonpath.Path) ([]history.Effect, page, error) {
	first, err := url.Parse(r.url)
	if err != nil {
		return nil, page{}, fmt.Errorf("effects.url %q: %w", r.url, err)
	}
	var out []history.Effect
	seen := map[string]bool{}
	at := first
	for n := 1; ; n++ {
		if seen[at.String()] {
			return nil, page{}, fmt.Errorf("GET %s: effects.next leads to a page already read: the listing loops", at)
		}
		if n > maxPages {
			return nil, page{}, fmt.Errorf("GET %s: more than %d pages: effects.next never ends", first, maxPages)
		}
		seen[at.String()] = true
		p, err := o.get(ctx, at.String(), r.headers)
		if err != nil {
			return nil, p, err
		}
		fx, err := o.pick(p.doc, r, paths)
		if err != nil {
			return nil, p, fmt.Errorf("GET %s: %w", at, err)
		}
		out = append(out, fx...)
		if o.c.Next == "" {
			return out, p, nil
		}
		next, more, err := o.next(p.doc, first, at, paths[o.c.Next])
		if err != nil {
			return nil, p, fmt.Errorf("GET %s: effects.next %q: %w", at, o.c.Next, err)
		}
		if !more {
			return out, p, nil
		}
		at = next
	}
}

// next is the page after page: the URL or cursor Next selects, and false
// at the end of the listing.
func (o httpOracle) next(doc any, first, page *url.URL, p *jsonpath.Path) (*url.URL, bool, error) {
	nodes := p.Select(doc)
	if len(nodes) == 0 {
		return nil, false, nil
	}
	if len(nodes) > 1 {
		return nil, false, fmt.Errorf("selects %d values, want one", len(nodes))
	}
	switch v := nodes[0].(type) {
	case nil:
		return nil, false, nil
	case bool:
		if !v {
			return nil, false, nil
		}
		return nil, false, errors.New("selects true: want the next page's URL or cursor")
	case map[string]any, []any:
		return nil, false, errors.New("selects an object or array: want the next page's URL or cursor")
	}
	v := scalar(nodes[0])
	if v == "" {
		return nil, false, nil
	}
	if o.c.Cursor != "" {
		u := *first
		q := u.Query()
		q.Set(o.c.Cursor, v)
		u.RawQuery = q.Encode()
		return &u, true, nil
	}
	u, err := page.Parse(v)
	if err != nil {
		return nil, false, fmt.Errorf("%q is not a URL: %w", v, err)
	}
	// The listing is the service's: a next link elsewhere is not read.
	if u.Scheme != first.Scheme || u.Host != first.Host {
		return nil, false, fmt.Errorf("%q leads away from %s://%s; the oracle reads one service's listing", v, first.Scheme, first.Host)
	}
	return u, true, nil
}

// page is one GET's answer: the decoded document, and the status and body
// it came with (quoted when a listing yields no effect at all).
type page struct {
	doc    any
	status int
	body   []byte
}

func (o httpOracle) get(ctx context.Context, u string, headers map[string]string) (page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return page{}, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return page{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	p := page{status: resp.StatusCode}
	if resp.StatusCode/100 != 2 {
		return p, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	if p.body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20)); err != nil {
		return p, fmt.Errorf("GET %s: %w", u, err)
	}
	if p.doc, err = decode(bytes.NewReader(p.body)); err != nil {
		return p, fmt.Errorf("GET %s: not JSON: %w", u, err)
	}
	return p, nil
}

// pick selects one page's effects; on a read per tenant, an item without a
// tenant expression is the read's tenant's.
func (o httpOracle) pick(doc any, r read, paths map[string]*jsonpath.Path) ([]history.Effect, error) {
	arr, err := selectItems(doc, o.c.Items, paths[o.c.Items])
	if err != nil {
		return nil, fmt.Errorf("items %q: %w", o.c.Items, err)
	}
	out := make([]history.Effect, 0, len(arr))
	for i, it := range arr {
		e := history.Effect{Tenant: r.tenant}
		for _, f := range []struct {
			expr string
			dst  *string
		}{{o.c.Tenant, &e.Tenant}, {o.c.Key, &e.Key}, {o.c.ID, &e.ID}, {o.c.State, &e.State}, {o.c.Resource, &e.Resource}} {
			if f.expr == "" {
				continue
			}
			v, err := one(paths[f.expr].Select(it))
			if err != nil {
				return nil, fmt.Errorf("item %d: %q: %w", i, f.expr, err)
			}
			*f.dst = scalar(v)
		}
		if o.c.WrittenAt != "" {
			v, err := one(paths[o.c.WrittenAt].Select(it))
			if err == nil {
				e.WrittenAt, err = writtenAt(v)
			}
			if err != nil {
				return nil, fmt.Errorf("item %d: %q: %w", i, o.c.WrittenAt, err)
			}
		}
		e.Kind = kindOf(e.ID)
		out = append(out, e)
	}
	return out, nil
}

// decode reads JSON keeping numbers as written: an id 12345678901234567890
// must not come back as 1.2345678901234567e19.
func decode(r io.Reader) (any, error) {
	d := json.NewDecoder(r)
	d.UseNumber()
	var doc any
	err := d.Decode(&doc)
	return doc, err
}

// selectItems returns the effects items selects. Nothing selected is an
// empty list when the list itself exists, and an error when it does not
// (a misspelt field must not read as "no effects").
func selectItems(doc any, expr string, p *jsonpath.Path) ([]any, error) {
	nodes := p.Select(doc)
	if len(nodes) == 1 {
		if arr, ok := nodes[0].([]any); ok && !strings.HasSuffix(strings.TrimSpace(expr), "]") {
			return arr, nil
		}
	}
	if len(nodes) == 0 {
		if parent, ok := parentOf(expr); ok {
			if pp, err := jsonpath.Parse(parent); err == nil && len(pp.Select(doc)) == 0 {
				return nil, fmt.Errorf("selects nothing: the document has no %s", parent)
			}
		}
	}
	return nodes, nil
}

// parentOf strips the last segment of an expression ending in a bracket
// selector ("$.data.effects[*]" → "$.data.effects").
func parentOf(expr string) (string, bool) {
	expr = strings.TrimSpace(expr)
	if !strings.HasSuffix(expr, "]") {
		return "", false
	}
	depth := 0
	for i := len(expr) - 1; i >= 0; i-- {
		switch expr[i] {
		case ']':
			depth++
		case '[':
			depth--
			if depth == 0 {
				return expr[:i], i > 1
			}
		}
	}
	return "", false
}

// one is the single value a field expression must select.
func one(nodes jsonpath.NodeList) (any, error) {
	switch len(nodes) {
	case 0:
		return nil, fmt.Errorf("selects nothing")
	case 1:
		return nodes[0], nil
	}
	return nil, fmt.Errorf("selects %d values, want one", len(nodes))
}

// ResponseID compiles a JSONPath that picks a resource id out of a response
// body; the returned function reports false for a body that is not JSON
// or where the expression does not select exactly one value.
func ResponseID(expr string) (func(body []byte) (string, bool), error) {
	p, err := jsonpath.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrOracle, expr, err)
	}
	return func(body []byte) (string, bool) {
		doc, err := decode(bytes.NewReader(body))
		if err != nil {
			return "", false
		}
		v, err := one(p.Select(doc))
		if err != nil || v == nil {
			return "", false
		}
		return scalar(v), true
	}, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
