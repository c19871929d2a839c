package scenarios_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/harness/driver"
	"github.com/idemchaos/idemchaos/internal/faultschema"
	"github.com/idemchaos/idemchaos/reference"
	"github.com/idemchaos/idemchaos/scenarios"
)

func schemaDoc(tb testing.TB) map[string]any {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(scenarios.Schema(), &doc); err != nil {
		tb.Fatalf("schema.json: %v", err)
	}
	return doc
}

func at(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestSchema_EnumsMatchRegistries keeps the schema's enums equal to the
// names the code registers, so an editor never offers a name the loader
// rejects, nor misses one.
func TestSchema_EnumsMatchRegistries(t *testing.T) {
	t.Parallel()
	doc := schemaDoc(t)
	var mutants []string
	for _, m := range reference.Mutants() {
		mutants = append(mutants, m.Name)
	}
	var models []string
	for _, m := range driver.Models() {
		models = append(models, string(m))
	}
	for name, c := range map[string]struct {
		enum any
		want []string
	}{
		"fault kinds": {at(doc, "$defs", "fault", "properties", "kind", "enum"), faults.Kinds()},
		"invariants":  {at(doc, "$defs", "invariantName", "enum"), checkers.Known()},
		"mutants":     {at(doc, "$defs", "reference", "properties", "mutant", "enum"), mutants},
		"clients":     {at(doc, "$defs", "traffic", "properties", "client", "enum"), models},
	} {
		got, want := strs(c.enum), slices.Clone(c.want)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: schema enum %v, code knows %v", name, got, want)
		}
	}
	for _, p := range []string{"ietf", "stripe"} {
		if _, err := checkers.ProfileByName(p); err != nil {
			t.Errorf("schema offers profile %s: %v", p, err)
		}
	}
}

// TestSchema_KeysMatchStructs keeps every object of the schema equal, key
// for key, to the yaml tags of the Go type it describes.
func TestSchema_KeysMatchStructs(t *testing.T) {
	t.Parallel()
	doc := schemaDoc(t)
	for def, typ := range map[string]reflect.Type{
		"":          reflect.TypeOf(scenarios.Scenario{}),
		"target":    reflect.TypeOf(scenarios.Target{}),
		"reference": reflect.TypeOf(scenarios.ReferenceTarget{}),
		"endpoint":  reflect.TypeOf(scenarios.Endpoint{}),
		"contract":  reflect.TypeOf(scenarios.Contract{}),
		"traffic":   reflect.TypeOf(scenarios.Traffic{}),
		"retry":     reflect.TypeOf(scenarios.Retry{}),
		"fault":     reflect.TypeOf(scenarios.FaultSpec{}),
		"when":      reflect.TypeOf(scenarios.When{}),
		"effects":   reflect.TypeOf(scenarios.Effects{}),
		"invariant": reflect.TypeOf(scenarios.Invariant{}),
		"hooks":     reflect.TypeOf(scenarios.Hooks{}),
		"step":      reflect.TypeOf(scenarios.Step{}),
	} {
		obj := doc
		if def != "" {
			obj = at(doc, "$defs", def).(map[string]any)
		}
		if obj["additionalProperties"] != false {
			t.Errorf("$defs/%s: additionalProperties is not false", def)
		}
		var got []string
		for k, v := range obj["properties"].(map[string]any) {
			got = append(got, k)
			d, _ := at(v, "description").(string)
			ref, _ := at(v, "$ref").(string)
			if d == "" && !strings.HasPrefix(ref, "#/$defs/") {
				t.Errorf("$defs/%s.%s has no description", def, k)
			}
		}
		var want []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if typ.Field(i).IsExported() && tag != "" && tag != "-" {
				want = append(want, tag)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("$defs/%q keys %v, %s has %v", def, got, typ.Name(), want)
		}
	}
}

// TestSchema_ParamsMatchFaults keeps each kind's params schema (editor help)
// equal to the fields the kind decodes, with matching types, and every
// enum value it offers accepted by the kind's Validate.
func TestSchema_ParamsMatchFaults(t *testing.T) {
	t.Parallel()
	doc := schemaDoc(t)
	for _, kind := range faults.Kinds() {
		def, ok := at(doc, "$defs", "params-"+kind).(map[string]any)
		if !ok {
			t.Errorf("no $defs/params-%s", kind)
			continue
		}
		props := def["properties"].(map[string]any)
		var got []string
		for name, p := range props {
			got = append(got, name)
			if _, err := (scenarios.FaultSpec{Kind: kind, Params: map[string]any{name: sampleValue(p)}}).Build(); err != nil {
				t.Errorf("params-%s.%s: a schema-valid value does not build: %v", kind, name, err)
			}
			enum, _ := at(p, "enum").([]any)
			for _, v := range enum {
				if _, err := (scenarios.FaultSpec{Kind: kind, Params: map[string]any{name: v}}).Build(); err != nil {
					t.Errorf("params-%s.%s: enum value %v rejected: %v", kind, name, v, err)
				}
			}
		}
		sort.Strings(got)
		if want := scenarios.ParamNames(kind); !slices.Equal(got, want) {
			t.Errorf("params-%s: schema %v, %s takes %v", kind, got, kind, want)
		}
	}
}

// sampleValue returns a value a property schema accepts.
func sampleValue(p any) any {
	if enum, ok := at(p, "enum").([]any); ok {
		return enum[len(enum)-1]
	}
	if ref, _ := at(p, "$ref").(string); ref == "#/$defs/duration" {
		return "150ms"
	}
	switch at(p, "type") {
	case "integer":
		return 2
	case "boolean":
		return true
	}
	return "x"
}

// TestSchema_FaultParamsAreGenerated keeps the committed schema.json what
// `go generate ./scenarios` writes: each kind's parameters (types, enums,
// bounds, the help an editor shows) come from its struct tags and doc
// comments in faults/, so a new kind, or a changed parameter, is one file
// there and a regenerated schema here.
func TestSchema_FaultParamsAreGenerated(t *testing.T) {
	t.Parallel()
	got := scenarios.Schema()
	want, err := faultschema.Update(got, "../faults")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schema.json is not what the faults registry generates; run go generate ./scenarios (first difference on line %d)", firstDiffLine(got, want))
	}
}

func firstDiffLine(a, b []byte) int {
	i := 0
	for i < min(len(a), len(b)) && a[i] == b[i] {
		i++
	}
	return bytes.Count(a[:i], []byte("\n")) + 1
}
