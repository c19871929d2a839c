package scaffold

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Options tune [Generate].
type Options struct {
	// KeyHeader is the idempotency-key header to look for, matched
	// case-insensitively (default Idempotency-Key).
	KeyHeader string
	// Operations names operations to scaffold although they declare no key
	// header: an operationId, or "METHOD /path" as the document writes it.
	Operations []string
	// Source names the document in the generated comments (default the
	// document's file name).
	Source string
	// TenantHeader names the header that carries the tenant, for a
	// document that does not say so recognisably (--tenant-header).
	TenantHeader string
	_            struct{}
}

// writeMethods are the methods a scenario can send (the schema's enum).
var writeMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// operation is one selected operation with what the document says about it.
type operation struct {
	method, path string
	op           *openapi3.Operation
	item         *openapi3.PathItem
	params       openapi3.Parameters // path item's and operation's, the operation's winning
	// keyParam is the declared key header (nil: selected by name only).
	keyParam *openapi3.Parameter
}

func (o *operation) id() string {
	if o.op.OperationID != "" {
		return o.op.OperationID
	}
	return o.method + " " + o.path
}

// selectOperations finds the operations that declare the key header or
// that opts names, in path order. A name that matches nothing, or names a
// method a scenario cannot send, is an error: a typo must not silently
// yield fewer scenarios.
func selectOperations(t *openapi3.T, opts Options) ([]*operation, error) {
	wanted := map[string]bool{}
	for _, n := range opts.Operations {
		wanted[n] = false
	}
	var out []*operation
	paths := t.Paths.Keys()
	sort.Strings(paths)
	for _, p := range paths {
		item := t.Paths.Value(p)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			op := item.GetOperation(m)
			if op == nil {
				continue
			}
			o := &operation{method: m, path: p, op: op, item: item, params: mergeParams(item.Parameters, op.Parameters)}
			named := false
			for _, n := range []string{op.OperationID, m + " " + p, strings.ToLower(m) + " " + p} {
				if _, ok := wanted[n]; ok && n != "" {
					wanted[n], named = true, true
				}
			}
			o.keyParam = o.param("header", opts.KeyHeader)
			if named && !slices.Contains(writeMethods, m) {
				return nil, fmt.Errorf("--operation %s: %s is not a write (a scenario sends POST, PUT, PATCH or DELETE)", o.id(), m)
			}
			if (o.keyParam != nil && slices.Contains(writeMethods, m)) || named {
				out = append(out, o)
			}
		}
	}
	var missing []string
	for n, found := range wanted {
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("--operation: no operation %s in the document (name an operationId or \"POST /path\")", strings.Join(missing, ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no write operation declares a %s header parameter: pass --key-header NAME if the document names it otherwise, or --operation ID to pick operations", opts.KeyHeader)
	}
	return out, nil
}

// mergeParams is the operation's parameters plus the path item's that the
// operation does not override (same name and location).
func mergeParams(item, op openapi3.Parameters) openapi3.Parameters {
	out := slices.Clone(op)
	for _, p := range item {
		if p.Value == nil {
			continue
		}
		if slices.ContainsFunc(op, func(q *openapi3.ParameterRef) bool {
			return q.Value != nil && q.Value.In == p.Value.In && strings.EqualFold(q.Value.Name, p.Value.Name)
		}) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// param returns the parameter named name in location in (names compared
// case-insensitively, as HTTP header names are).
func (o *operation) param(in, name string) *openapi3.Parameter {
	for _, p := range o.params {
		if p.Value != nil && p.Value.In == in && strings.EqualFold(p.Value.Name, name) {
			return p.Value
		}
	}
	return nil
}

// slug makes a scenario name from an operation: its operationId in kebab
// case, else the method and path.
func slug(o *operation) string {
	src := o.op.OperationID
	if src == "" {
		src = strings.ToLower(o.method) + " " + o.path
	}
	var b strings.Builder
	prevLower := false
	dash := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	for _, r := range src {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				dash()
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			dash()
			prevLower = false
		}
	}
	return strings.Trim(b.String(), "-")
}
