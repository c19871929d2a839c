package scenarios

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/idemchaos/idemchaos/internal/suggest"
)

// The fault parameters in schema.json ($defs/params-<kind>, the kind enum)
// are generated from the faults registry: edit a kind's struct, its tags
// and doc comments, then regenerate.
//
//go:generate go run ../internal/faultschema/gen.go

//go:embed schema.json
var schemaJSON []byte

// SchemaURL is the schema's $id: point yaml-language-server at it with a
// first line "# yaml-language-server: $schema=<SchemaURL>", or at the file
// in a checkout (a relative path works too).
const SchemaURL = "https://raw.githubusercontent.com/idemchaos/idemchaos/main/scenarios/schema.json"

// Schema returns the JSON Schema (draft 2020-12) of the scenario format.
// The loader validates every file against it before its semantic checks.
func Schema() []byte { return bytes.Clone(schemaJSON) }

type compiledSchema struct {
	sch *jsonschema.Schema
	doc map[string]any
}

// compiled is the embedded schema, compiled once. It is a constant of the
// program, so a failure is a bug the tests catch: it panics.
var compiled = sync.OnceValue(func() compiledSchema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		panic("scenarios: schema.json: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		panic("scenarios: schema.json: " + err.Error())
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		panic("scenarios: schema.json: " + err.Error())
	}
	return compiledSchema{sch: sch, doc: doc.(map[string]any)}
})

var printer = message.NewPrinter(language.English)

// validateSchema checks t.val against the schema and records every leaf
// error in words, at the position of the node it is about.
func (t *tree) validateSchema() {
	err := compiled().sch.Validate(t.val)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		t.schemaError(ve)
	}
}

func (t *tree) schemaError(e *jsonschema.ValidationError) {
	loc := e.InstanceLocation
	if _, ok := e.ErrorKind.(*kind.OneOf); ok && slices.Equal(loc, []string{"target"}) {
		t.targetChoice()
		return
	}
	if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
		t.errorf(t.keyPos(ptr(ptr("", loc...), k.Property)), "%s: %q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~)", display(t.val, loc), k.Property)
		return
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			t.schemaError(c)
		}
		return
	}
	if strings.HasPrefix(defName(e.SchemaURL), "params-") {
		// The per-kind params schemas are for editors; the Go decoder of
		// the kind's own struct reports the same problems, better
		// (checkFaults), and is the one source of truth.
		return
	}
	p := ptr("", loc...)
	where := display(t.val, loc)
	got, _ := lookup(t.val, loc...)
	def := defName(e.SchemaURL)
	prefix := where + ": "
	if where == "" {
		prefix = "the scenario: "
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		allowed := t.allowedKeys(e.SchemaURL)
		in := "in " + where
		if where == "" {
			in = "at the top level"
		}
		for _, name := range k.Properties {
			if s := suggest.DidYouMean(name, allowed); s != "" {
				t.errorf(t.keyPos(ptr(p, name)), "unknown key %q %s%s", name, in, s)
			} else {
				t.errorf(t.keyPos(ptr(p, name)), "unknown key %q %s (expected one of: %s)", name, in, strings.Join(allowed, ", "))
			}
		}
	case *kind.Required:
		for _, name := range k.Missing {
			t.errorf(t.keyPos(p), "%smissing required key %q%s", prefix, name, requiredHint[name])
		}
	case *kind.Type:
		if def == "duration" {
			t.errorf(t.posOf(p), "%sexpected a duration (e.g. 500ms, 2s, 1m), got %s", prefix, describe(got))
			return
		}
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		t.errorf(t.posOf(p), "%sexpected %s, got %s", prefix, strings.Join(want, " or "), describe(got))
	case *kind.Pattern:
		if def == "duration" {
			if s, _ := got.(string); strings.HasPrefix(s, "-") {
				t.errorf(t.posOf(p), "%s%q is negative; expected a duration of 0 or more", prefix, s)
				return
			}
			t.errorf(t.posOf(p), "%s%q is not a duration (e.g. 500ms, 2s, 1m)", prefix, got)
			return
		}
		t.errorf(t.posOf(p), "%s%q is not %s", prefix, got, patternMeaning(loc))
	case *kind.Enum:
		want := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		s, isString := got.(string)
		val := describe(got)
		if isString {
			val = strconv.Quote(s)
		}
		t.errorf(t.posOf(p), "%sunknown %s %s%s (known: %s)", prefix, enumNoun(loc), val, suggest.DidYouMean(s, want), strings.Join(want, ", "))
	case *kind.Minimum, *kind.Maximum:
		var want *big.Rat
		word := "at least"
		if m, ok := k.(*kind.Minimum); ok {
			want = m.Want
		} else {
			want, word = k.(*kind.Maximum).Want, "at most"
		}
		if def == "rate" {
			t.errorf(t.posOf(p), "%s%v is out of range: a rate is a fraction from 0 to 1", prefix, got)
			return
		}
		t.errorf(t.posOf(p), "%sexpected %s %s, got %v", prefix, word, want.RatString(), got)
	case *kind.MinLength:
		t.errorf(t.posOf(p), "%smust not be empty", prefix)
	default:
		t.errorf(t.posOf(p), "%s%s", prefix, e.ErrorKind.LocalizedString(printer))
	}
}

// targetChoice explains a target with both or neither of reference and url.
func (t *tree) targetChoice() {
	_, ref := lookup(t.val, "target", "reference")
	_, url := lookup(t.val, "target", "url")
	if ref && url {
		t.errorf(t.keyPos("/target/url"), "target: both reference and url are set; set exactly one (reference: the bundled service, url: your service)")
		return
	}
	t.errorf(t.keyPos("/target"), "target: set exactly one of reference (the bundled service, e.g. reference: {}) and url (your service)")
}

// requiredHint follows "missing required key X" with what X looks like.
var requiredHint = map[string]string{
	"target": " (reference: {} for the bundled service, or url: for yours)",
	"kind":   " (e.g. kind: response-drop)",
	"name":   " (e.g. name: eventually-decided)",
}

// defName returns the $defs name a schema location is in ("duration"), or "".
func defName(schemaURL string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	parts := strings.Split(frag, "/")
	if len(parts) >= 3 && parts[1] == "$defs" {
		return parts[2]
	}
	return ""
}

// allowedKeys lists the properties of the object schema at schemaURL.
func (t *tree) allowedKeys(schemaURL string) []string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	var v any = compiled().doc
	for _, tok := range splitPtr(frag) {
		v, _ = lookup(v, tok)
	}
	props, _ := lookup(v, "properties")
	m, _ := props.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe says what a value is, for "expected X, got Y".
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing (null)"
	case string:
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return fmt.Sprintf("string %q", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case int64, uint64:
		return fmt.Sprintf("integer %v", v)
	case float64:
		return fmt.Sprintf("number %v", v)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

func article(jsonType string) string {
	switch jsonType {
	case "integer":
		return "an integer"
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "boolean":
		return "true or false"
	case "null":
		return "nothing"
	}
	return "a " + jsonType
}

// enumNoun names what an enum field holds, for "unknown <noun>".
func enumNoun(loc []string) string {
	if len(loc) == 0 {
		return "value"
	}
	if loc[0] == "invariants" {
		return "invariant"
	}
	if loc[0] == "broker" {
		return "broker kind"
	}
	if loc[0] == "messages" {
		return "delivery fault"
	}
	switch loc[len(loc)-1] {
	case "kind":
		return "fault kind"
	case "client":
		return "client model"
	case "mutant":
		return "mutant"
	case "profile":
		return "contract profile"
	case "oracle":
		return "effects oracle"
	case "method":
		return "method"
	}
	return "value"
}

// patternMeaning says in words what a non-duration pattern asks for.
func patternMeaning(loc []string) string {
	if len(loc) == 0 {
		return "valid here"
	}
	switch loc[len(loc)-1] {
	case "path":
		return "a path (it must start with /)"
	case "url":
		return "an http:// or https:// URL"
	case "key_header":
		return "a valid header name"
	}
	return "valid here"
}
