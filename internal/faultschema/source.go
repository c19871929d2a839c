package faultschema

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// typeDocs are the doc comments of a struct type and its fields.
type typeDocs struct {
	doc    string
	fields map[string]string // Go field name → doc
}

// readDocs parses the Go files of dir (tests left out) and returns the doc
// comments of every struct type, by type name. The registry gives types,
// tags and the embedding; only the comments need the source.
func readDocs(dir string) (map[string]typeDocs, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("fault sources: %w", err)
	}
	fset := token.NewFileSet()
	out := map[string]typeDocs{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("fault sources: %w", err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				td := typeDocs{doc: text(doc), fields: map[string]string{}}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						td.fields[n.Name] = text(fl.Doc)
					}
				}
				out[ts.Name.Name] = td
			}
		}
	}
	return out, nil
}

// text is a doc comment as one line of plain text: doc links and code
// spans printed as their words, paragraphs joined by a space.
func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	var p comment.Parser
	pr := comment.Printer{TextWidth: 1 << 20}
	return strings.Join(strings.Fields(string(pr.Text(p.Parse(g.Text())))), " ")
}
