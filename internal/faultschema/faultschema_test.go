package faultschema_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/faultschema"
)

const faultsDir = "../../faults"

// Each kind's Validate accepts exactly what its tags tell the schema: every
// enum value and nothing else, the bounds and nothing past them. The tags
// are the editor's promise; Validate is the loader's word.
func TestParams_ValidateAgreesWithTags(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, kind := range faults.Kinds() {
		k, err := faultschema.Params(kind, faultsDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range k.Params {
			try := func(v any) error {
				f, _ := faults.New(kind)
				fv := reflect.ValueOf(f).Elem().FieldByIndex(p.Index)
				fv.Set(reflect.ValueOf(v).Convert(fv.Type()))
				return f.Validate()
			}
			for _, v := range p.Enum {
				checked++
				if err := try(v); err != nil {
					t.Errorf("%s.%s: enum value %v rejected: %v", kind, p.Name, v, err)
				}
			}
			if len(p.Enum) > 0 {
				outside := any("not-in-the-enum")
				if n, ok := p.Enum[0].(int64); ok {
					outside = n + 1
				}
				if try(outside) == nil {
					t.Errorf("%s.%s: %v, outside the enum %v, accepted", kind, p.Name, outside, p.Enum)
				}
			}
			if p.Minimum != nil {
				checked++
				if err := try(*p.Minimum); err != nil {
					t.Errorf("%s.%s: the minimum %d rejected: %v", kind, p.Name, *p.Minimum, err)
				}
				if try(*p.Minimum-1) == nil {
					t.Errorf("%s.%s: %d, under the minimum, accepted", kind, p.Name, *p.Minimum-1)
				}
			}
			if p.Maximum != nil {
				checked++
				if err := try(*p.Maximum); err != nil {
					t.Errorf("%s.%s: the maximum %d rejected: %v", kind, p.Name, *p.Maximum, err)
				}
				if try(*p.Maximum+1) == nil {
					t.Errorf("%s.%s: %d, over the maximum, accepted", kind, p.Name, *p.Maximum+1)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d constraints: the tags were not read", checked)
	}
}

// A parameter's help is its doc comment, with Go names said as the yaml
// keys a scenario's author writes.
func TestParams_DocsSayYAMLNames(t *testing.T) {
	t.Parallel()
	k, err := faultschema.Params("double-click", faultsDir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Doc, "double-click sends several copies") {
		t.Errorf("kind doc %q, want the type's doc comment with the kind's name", k.Doc)
	}
	var together string
	for _, p := range k.Params {
		if p.Name == "together" {
			together = p.Doc
		}
	}
	if !strings.HasPrefix(together, "together sends the copies") || !strings.Contains(together, "(spread is not used)") {
		t.Errorf("together's doc %q, want its doc comment in yaml names", together)
	}
}

// Update rewrites only what the registry owns: a schema whose generated
// parts are stale gets them back, and every other byte stays.
func TestUpdate_RewritesOnlyTheGeneratedParts(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Stale: one kind's params renamed away; a hand-written def changed
	// too, which must stay as edited.
	stale := bytes.Replace(committed, []byte(`"params-slow-db": {`), []byte(`"params-gone": {`), 1)
	stale = bytes.Replace(stale, []byte(`"A fraction in [0, 1]."`), []byte(`"A fraction, by hand."`), 1)
	if bytes.Equal(stale, committed) {
		t.Fatal("the edits did not apply")
	}
	got, err := faultschema.Update(stale, faultsDir)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(committed, []byte(`"A fraction in [0, 1]."`), []byte(`"A fraction, by hand."`), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("Update did not restore the generated parts alone:\n%s", got)
	}
}

// A parameter without a doc comment has no help to give: generation fails
// and names it.
func TestUpdate_RefusesAnUndocumentedParameter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := filepath.Glob(filepath.Join(faultsDir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range src {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "response_drop.go" {
			b = bytes.Replace(b, []byte("\t// Bytes of the response let through before the cut (default 0).\n"), nil, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	schema, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = faultschema.Update(schema, dir)
	if err == nil || !strings.Contains(err.Error(), "bytes") || !strings.Contains(err.Error(), "no doc comment") {
		t.Fatalf("Update of an undocumented parameter: %v, want an error naming it", err)
	}
}
