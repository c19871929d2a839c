package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// HTTP returns an oracle that GETs url and picks effects out of the JSON
// answer. items selects the list of effects ("$.effects[*]", or "$[*]" for a
// top-level array); tenant, key and id select fields of each item ("$.tenant",
// "$.order.id"). Only dotted names and a trailing [*] are supported: enough
// for an effects endpoint, and small enough to get right.
func HTTP(url, items, tenant, key, id string) Oracle {
	return httpOracle{url: url, items: items, tenant: tenant, key: key, id: id}
}

type httpOracle struct{ url, items, tenant, key, id string }

var httpClient = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 30 * time.Second}

func (o httpOracle) Effects(ctx context.Context) ([]history.Effect, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOracle, err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrOracle, o.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: GET %s: status %d", ErrOracle, o.url, resp.StatusCode)
	}
	var doc any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: GET %s: not JSON: %w", ErrOracle, o.url, err)
	}
	list, err := selectPath(doc, o.items)
	if err != nil {
		return nil, fmt.Errorf("%w: items %q: %w", ErrOracle, o.items, err)
	}
	arr, ok := list.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: items %q: not a list", ErrOracle, o.items)
	}
	out := make([]history.Effect, 0, len(arr))
	for i, it := range arr {
		var e history.Effect
		for _, f := range []struct {
			path string
			dst  *string
		}{{o.tenant, &e.Tenant}, {o.key, &e.Key}, {o.id, &e.ID}} {
			if f.path == "" {
				continue
			}
			v, err := selectPath(it, f.path)
			if err != nil {
				return nil, fmt.Errorf("%w: item %d: %q: %w", ErrOracle, i, f.path, err)
			}
			*f.dst = scalar(v)
		}
		e.Kind = kindOf(e.ID)
		out = append(out, e)
	}
	return out, nil
}

// selectPath follows "$.a.b[*]" (a trailing [*] means "the list itself").
func selectPath(v any, path string) (any, error) {
	p := strings.TrimPrefix(strings.TrimSpace(path), "$")
	p = strings.TrimSuffix(p, "[*]")
	p = strings.TrimPrefix(p, ".")
	if p == "" {
		return v, nil
	}
	for _, name := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q: not an object", name)
		}
		if v, ok = m[name]; !ok {
			return nil, fmt.Errorf("no field %q", name)
		}
	}
	return v, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
