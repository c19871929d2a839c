package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/theory/jsonpath"

	"github.com/idemchaos/idemchaos/history"
)

// HTTP returns an oracle that GETs url and picks effects out of the JSON
// answer with JSONPath expressions (RFC 9535, github.com/theory/jsonpath):
// items selects the effects ("$.effects[*]", "$[*]" for a top-level array,
// "$.effects[?@.kind=='order']"); tenant, key and id select one value of
// each item ("$.tenant", "$.order.id"). An items expression that selects a
// single array means its elements. Its requests go through the [Net] of
// [Through] (default: loopback only), every redirect hop included.
func HTTP(url, items, tenant, key, id string, opts ...Option) Oracle {
	n := netFor("effects.url", opts)
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: n.DialContext}, Timeout: 30 * time.Second}
	if r, ok := n.(redirector); ok {
		client.CheckRedirect = r.CheckRedirect
	}
	return httpOracle{url: url, items: items, tenant: tenant, key: key, id: id, client: client}
}

type httpOracle struct {
	url, items, tenant, key, id string
	client                      *http.Client
}

func (o httpOracle) Effects(ctx context.Context) ([]history.Effect, error) {
	r, err := o.read(ctx)
	return r.Effects, err
}

func (o httpOracle) read(ctx context.Context) (Reading, error) {
	r := Reading{Source: "GET " + o.url}
	fx, status, body, err := o.effects(ctx)
	r.Effects = fx
	if err == nil && len(fx) == 0 {
		r.Got = strconv.Itoa(status) + " " + clip(strings.Join(strings.Fields(string(body)), " "), maxGot)
	}
	return r, err
}

// effects GETs the URL and picks the effects out of its answer, which it
// returns too (its status and body).
func (o httpOracle) effects(ctx context.Context) ([]history.Effect, int, []byte, error) {
	paths := map[string]*jsonpath.Path{}
	for _, expr := range []string{o.items, o.tenant, o.key, o.id} {
		if expr == "" {
			continue
		}
		p, err := jsonpath.Parse(expr)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("%w: %q: %w", ErrOracle, expr, err)
		}
		paths[expr] = p
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url, nil)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w: GET %s: %w", ErrOracle, o.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, resp.StatusCode, nil, fmt.Errorf("%w: GET %s: status %d", ErrOracle, o.url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, resp.StatusCode, nil, fmt.Errorf("%w: GET %s: %w", ErrOracle, o.url, err)
	}
	doc, err := decode(bytes.NewReader(body))
	if err != nil {
		return nil, resp.StatusCode, body, fmt.Errorf("%w: GET %s: not JSON: %w", ErrOracle, o.url, err)
	}
	arr, err := selectItems(doc, o.items, paths[o.items])
	if err != nil {
		return nil, resp.StatusCode, body, fmt.Errorf("%w: items %q: %w", ErrOracle, o.items, err)
	}
	out := make([]history.Effect, 0, len(arr))
	for i, it := range arr {
		var e history.Effect
		for _, f := range []struct {
			expr string
			dst  *string
		}{{o.tenant, &e.Tenant}, {o.key, &e.Key}, {o.id, &e.ID}} {
			if f.expr == "" {
				continue
			}
			v, err := one(paths[f.expr].Select(it))
			if err != nil {
				return nil, resp.StatusCode, body, fmt.Errorf("%w: item %d: %q: %w", ErrOracle, i, f.expr, err)
			}
			*f.dst = scalar(v)
		}
		e.Kind = kindOf(e.ID)
		out = append(out, e)
	}
	return out, resp.StatusCode, body, nil
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
