package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// publicAPI are the packages a user of the module imports: no exported
// identifier of theirs may name a type of an internal package, which the
// user could not name (Runner.Local once was an *env.Local, EnvKind an
// alias of env.Kind).
var publicAPI = []string{"harness", "harness/catchmatrix", "harness/docker", "harness/driver", "harness/oracle", "harness/pgtest", "checkers", "history", "scenarios", "faults", "reference", "report", "report/htmlpage"}

// knownLeaks are the exceptions still to be removed, by package and
// identifier: pgtest's shared cluster is used by the module's own tests of
// internal/pgcluster and internal/env through these two.
var knownLeaks = map[string]bool{"harness/pgtest.Primary": true, "harness/pgtest.Standby": true}

// internalUses lists, for one package directory, every exported
// declaration whose type mentions an import under an internal/ path.
func internalUses(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]string{} // local name → path
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if !strings.Contains(p, "/internal/") {
				continue
			}
			local := p[strings.LastIndex(p, "/")+1:]
			if is.Name != nil {
				local = is.Name.Name
			}
			internal[local] = p
		}
		if len(internal) == 0 {
			continue
		}
		mentions := func(what string, n ast.Node) {
			if n == nil {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
						found = append(found, what+"\x00"+fset.Position(sel.Pos()).String()+": "+what+" names "+internal[id.Name]+"."+sel.Sel.Name)
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				mentions(d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							exportedParts(sp.Name.Name, sp.Type, mentions)
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.IsExported() {
								mentions(n.Name, sp.Type)
								for _, v := range sp.Values {
									mentions(n.Name, v)
								}
							}
						}
					}
				}
			}
		}
	}
	return found
}

// exportedRecv says whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedParts checks what a user sees of a type: a struct's exported
// fields, an interface's methods, anything else whole.
func exportedParts(name string, t ast.Expr, mentions func(string, ast.Node)) {
	switch t := t.(type) {
	case *ast.StructType:
		for _, f := range t.Fields.List {
			for _, n := range f.Names {
				if n.IsExported() {
					mentions(name+"."+n.Name, f.Type)
				}
			}
			if len(f.Names) == 0 { // embedded: its methods and fields show
				mentions(name, f.Type)
			}
		}
	case *ast.InterfaceType:
		mentions(name, t)
	default:
		mentions(name, t)
	}
}

func TestPublicAPI_NamesNoInternalType(t *testing.T) {
	t.Parallel()
	for _, pkg := range publicAPI {
		for _, use := range internalUses(t, filepath.Join("..", "..", pkg)) {
			what, where, _ := strings.Cut(use, "\x00")
			if !knownLeaks[pkg+"."+what] {
				t.Errorf("%s: a user of %s cannot name it", where, pkg)
			}
		}
	}
}
