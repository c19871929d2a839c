package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/idemchaos/idemchaos/faults"
)

// pos is a 1-based line:column in the file.
type pos struct{ line, col int }

// tree is a scenario file as plain values (map[string]any, []any, string,
// int64/uint64, float64, bool, nil: what a JSON Schema validator takes),
// with the position of every value and of every mapping key, keyed by JSON
// pointer. Anchors, aliases and merge keys are resolved here, once, so the
// schema, the semantic checks and the decoder all see the same values.
type tree struct {
	file  string
	val   any
	at    map[string]pos          // pointer → position of the value
	keyAt map[string]pos          // pointer → position of the key naming it
	node  map[string]ast.Node     // pointer → node (for FaultSpec.Node)
	built map[string]faults.Fault // pointer → a fault decoded and validated without a problem
	errs  Errors

	anchors   map[string]ast.Node
	expanding map[string]bool   // anchors being expanded: an alias to one is a cycle
	budget    int               // nodes left to convert: bounds alias expansion ("billion laughs")
	stop      bool              // conversion gave up (too big or too deep)
	dropped   int               // problems past maxErrors, counted, not kept
	env       map[string]string // environment variables ${NAME} read, and their values
}

// Bounds on what one scenario file may expand to. Real scenarios are a few
// hundred nodes; the bounds only stop hostile or runaway input.
const (
	maxNodes  = 20_000
	maxDepth  = 64
	maxErrors = 100
)

func newTree(file string) *tree {
	return &tree{
		file: file, at: map[string]pos{}, keyAt: map[string]pos{}, node: map[string]ast.Node{},
		anchors: map[string]ast.Node{}, expanding: map[string]bool{}, budget: maxNodes,
	}
}

// errorf records a problem at p.
func (t *tree) errorf(p pos, format string, args ...any) {
	t.wrapf(p, nil, format, args...)
}

// wrapf records a problem at p with an underlying cause.
func (t *tree) wrapf(p pos, cause error, format string, args ...any) {
	if len(t.errs.List) >= maxErrors {
		t.dropped++
		return
	}
	p.line, p.col = max(p.line, 1), max(p.col, 1)
	t.errs.List = append(t.errs.List, Error{File: t.file, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...), Err: cause})
}

// finish sorts the problems and notes how many were not kept.
func (t *tree) finish() *Errors {
	t.errs.sort()
	if t.dropped > 0 {
		last := t.errs.List[len(t.errs.List)-1]
		t.errs.List = append(t.errs.List, Error{File: t.file, Line: last.Line, Col: last.Col,
			Msg: fmt.Sprintf("... and %d more problems (only the first %d are shown)", t.dropped, maxErrors)})
	}
	return &t.errs
}

// posOf returns the position of a value, falling back to the key that
// names it (an empty value has no position of its own) and then to the
// closest enclosing value.
func (t *tree) posOf(ptr string) pos {
	for {
		if p, ok := t.at[ptr]; ok {
			return p
		}
		if p, ok := t.keyAt[ptr]; ok {
			return p
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return pos{1, 1}
		}
		ptr = ptr[:i]
	}
}

// keyPos returns the position of the key naming ptr, else the value's.
func (t *tree) keyPos(ptr string) pos {
	if p, ok := t.keyAt[ptr]; ok {
		return p
	}
	return t.posOf(ptr)
}

func nodePos(n ast.Node) (pos, bool) {
	// A block mapping's token is the ':' of its first pair; users look for
	// the first key. (A flow mapping's is its '{', which is right.)
	switch m := n.(type) {
	case nil:
		return pos{}, false
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0] != nil {
			return nodePos(m.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return nodePos(m.Key)
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line <= 0 {
		return pos{}, false
	}
	return pos{tk.Position.Line, max(tk.Position.Column, 1)}, true
}

// ptr joins JSON pointer tokens, escaping them (RFC 6901).
func ptr(base string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, tok := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// conv converts n, recorded at pointer p.
func (t *tree) conv(n ast.Node, p string, depth int) any {
	if t.stop {
		return nil
	}
	if t.budget--; t.budget < 0 {
		np, _ := nodePos(n)
		t.errorf(np, "the file expands to more than %d values (aliases of aliases?); a scenario is far smaller", maxNodes)
		t.stop = true
		return nil
	}
	if depth > maxDepth {
		np, _ := nodePos(n)
		t.errorf(np, "values are nested more than %d levels deep", maxDepth)
		t.stop = true
		return nil
	}
	if np, ok := nodePos(n); ok {
		if _, null := n.(*ast.NullNode); !null || t.keyAt[p] == (pos{}) {
			t.at[p] = np
		}
	}
	if n != nil {
		t.node[p] = n
	}
	switch n := n.(type) {
	case nil, *ast.NullNode, *ast.CommentNode, *ast.CommentGroupNode:
		return nil
	case *ast.DocumentNode:
		return t.conv(n.Body, p, depth)
	case *ast.StringNode:
		return n.Value
	case *ast.LiteralNode:
		if n.Value == nil {
			return ""
		}
		return n.Value.Value
	case *ast.IntegerNode:
		return n.Value
	case *ast.FloatNode:
		return n.Value
	case *ast.InfinityNode, *ast.NanNode:
		// Not JSON numbers: keep the text, so the schema says "got string".
		return n.GetToken().Value
	case *ast.BoolNode:
		return n.Value
	case *ast.TagNode:
		if n.Start != nil && n.Start.Value == "!!str" {
			if tk := n.Value.GetToken(); tk != nil {
				if s, ok := n.Value.(*ast.StringNode); ok {
					return s.Value
				}
				return tk.Value
			}
		}
		return t.conv(n.Value, p, depth+1)
	case *ast.AnchorNode:
		v := t.conv(n.Value, p, depth+1)
		// Registered after its value, so an alias inside it cannot recurse.
		if n.Name != nil && n.Name.GetToken() != nil {
			t.anchors[n.Name.GetToken().Value] = n.Value
		}
		return v
	case *ast.AliasNode:
		name := ""
		if n.Value != nil && n.Value.GetToken() != nil {
			name = n.Value.GetToken().Value
		}
		target, ok := t.anchors[name]
		if !ok {
			t.errorf(t.posOf(p), "alias *%s names no anchor defined before it", name)
			return nil
		}
		if t.expanding[name] {
			t.errorf(t.posOf(p), "alias *%s refers to a value that contains it", name)
			return nil
		}
		t.expanding[name] = true
		defer delete(t.expanding, name)
		return t.conv(target, p, depth+1)
	case *ast.MappingKeyNode:
		return t.conv(n.Value, p, depth+1)
	case *ast.MappingNode:
		return t.mapping(n.Values, p, depth)
	case *ast.MappingValueNode:
		return t.mapping([]*ast.MappingValueNode{n}, p, depth)
	case *ast.SequenceNode:
		out := make([]any, 0, len(n.Values))
		for i, v := range n.Values {
			out = append(out, t.conv(v, ptr(p, strconv.Itoa(i)), depth+1))
		}
		return out
	}
	np, _ := nodePos(n)
	t.errorf(np, "unsupported YAML here (%s); expected a plain value, a list or a mapping", n.Type())
	return nil
}

func (t *tree) mapping(pairs []*ast.MappingValueNode, p string, depth int) map[string]any {
	m := make(map[string]any, len(pairs))
	for _, mv := range pairs {
		if mv == nil {
			continue
		}
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			t.merge(m, t.conv(mv.Value, p, depth+1), mv)
			continue
		}
		k, ok := keyString(mv.Key)
		kp, _ := nodePos(mv.Key)
		if !ok {
			t.errorf(kp, "a key must be a plain string, not a list or a mapping")
			continue
		}
		cp := ptr(p, k)
		t.keyAt[cp] = kp
		m[k] = t.conv(mv.Value, cp, depth+1)
	}
	return m
}

// merge applies a YAML merge key (<<: *base or <<: [*a, *b]): keys already
// set win.
func (t *tree) merge(m map[string]any, v any, mv *ast.MappingValueNode) {
	var srcs []map[string]any
	switch v := v.(type) {
	case map[string]any:
		srcs = []map[string]any{v}
	case []any:
		for _, x := range v {
			if xm, ok := x.(map[string]any); ok {
				srcs = append(srcs, xm)
			}
		}
	}
	if len(srcs) == 0 {
		kp, _ := nodePos(mv.Key)
		t.errorf(kp, "<< expects a mapping or a list of mappings to merge")
		return
	}
	for _, src := range srcs {
		for k, x := range src {
			if _, set := m[k]; !set {
				m[k] = x
			}
		}
	}
}

func keyString(k ast.Node) (string, bool) {
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value, true
	case *ast.MappingKeyNode:
		return keyString(k.Value)
	case *ast.TagNode:
		return keyString(k.Value)
	case *ast.MappingNode, *ast.SequenceNode, *ast.MappingValueNode, *ast.AliasNode, *ast.AnchorNode, nil:
		return "", false
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value, true
	}
	return "", false
}

// lookup returns the value at pointer tokens, and whether it exists.
func lookup(v any, tokens ...string) (any, bool) {
	for _, tok := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// display turns pointer tokens into the dotted path users read:
// faults[1].when.fraction.
func display(root any, tokens []string) string {
	var b strings.Builder
	v := root
	for _, tok := range tokens {
		if _, list := v.([]any); list {
			b.WriteString("[" + tok + "]")
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
		}
		v, _ = lookup(v, tok)
	}
	return b.String()
}

// splitPtr is the inverse of ptr.
func splitPtr(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return parts
}
