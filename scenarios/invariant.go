package scenarios

import (
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// UnmarshalYAML decodes an invariant written either as its name
// ("exactly-once") or as a mapping {name, bound, headers}.
func (i *Invariant) UnmarshalYAML(data []byte) error {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return fmt.Errorf("decode invariant: %w", err)
	}
	if len(f.Docs) == 1 && f.Docs[0] != nil {
		switch n := f.Docs[0].Body.(type) {
		case *ast.StringNode:
			*i = Invariant{Name: n.Value}
			return nil
		case nil, *ast.NullNode:
			*i = Invariant{}
			return nil
		}
	}
	type plain Invariant // no UnmarshalYAML: no recursion
	var p plain
	if err := yaml.UnmarshalWithOptions(data, &p, yaml.Strict()); err != nil {
		return fmt.Errorf("decode invariant: %w", err)
	}
	*i = Invariant(p)
	return nil
}
