package scaffold

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/getkin/kin-openapi/openapi3"
)

// ErrDocument is wrapped by every error about the OpenAPI document itself.
var ErrDocument = errors.New("openapi document")

// Document is a loaded OpenAPI document with every $ref resolved.
type Document struct {
	// File is where it was read from.
	File string
	// T is the parsed document.
	T *openapi3.T
	// Warnings are the document's own validation problems: a scaffold is
	// still useful from a document with mistakes, so they are reported,
	// not fatal.
	Warnings []string
}

// Load reads an OpenAPI 3.0 or 3.1 document, YAML or JSON. Only refs inside
// the file are followed: a document must not make idemchaos read other
// files or fetch URLs.
func Load(ctx context.Context, file string) (*Document, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDocument, err)
	}
	l := openapi3.NewLoader()
	l.Context = ctx
	l.IncludeOrigin = true
	loc := &url.URL{Path: filepath.ToSlash(file)}
	t, err := l.LoadFromDataWithPath(b, loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDocument, file, err)
	}
	if t.OpenAPI == "" || t.OpenAPI[0] != '3' {
		return nil, fmt.Errorf("%w: %s: openapi %q: only OpenAPI 3.0 and 3.1 are read (convert Swagger 2.0 first)", ErrDocument, file, t.OpenAPI)
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		return nil, fmt.Errorf("%w: %s: no paths", ErrDocument, file)
	}
	d := &Document{File: file, T: t}
	if err := t.Validate(ctx, openapi3.DisableExamplesValidation()); err != nil {
		d.Warnings = append(d.Warnings, err.Error())
	}
	return d, nil
}
