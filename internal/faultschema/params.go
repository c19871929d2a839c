package faultschema

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/faults"
)

// Param is one parameter of a fault kind, as the schema describes it.
type Param struct {
	// Name is the yaml key; GoName the field's name.
	Name, GoName string
	// Index is the field's index path in the kind's struct (through the
	// embedded parameter sets), for reflect.Value.FieldByIndex.
	Index []int
	Type  reflect.Type
	// Doc is the field's doc comment, Go field names said as yaml keys.
	Doc string
	// Enum lists the only values allowed (strings or int64s); Minimum and
	// Maximum bound an integer. From the field's jsonschema tag.
	Enum             []any
	Minimum, Maximum *int64
}

// Kind is one fault kind: its name, what it does, and its parameters.
type Kind struct {
	Name   string
	Doc    string
	Params []Param
}

// Params returns a registered kind with its parameters, in field order,
// with the doc comments of the faults package's source in dir. Every
// parameter needs a doc comment: it is the editor's help.
func Params(kind, dir string) (Kind, error) {
	docs, err := readDocs(dir)
	if err != nil {
		return Kind{}, err
	}
	return params(kind, docs)
}

func params(kind string, docs map[string]typeDocs) (Kind, error) {
	f, err := faults.New(kind)
	if err != nil {
		return Kind{}, err
	}
	t := reflect.TypeOf(f).Elem()
	td, ok := docs[t.Name()]
	if !ok || td.doc == "" {
		return Kind{}, fmt.Errorf("%s: type %s has no doc comment in the faults source", kind, t.Name())
	}
	k := Kind{Name: kind, Doc: leading(td.doc, t.Name(), kind)}
	if err := fields(t, nil, docs, &k.Params); err != nil {
		return Kind{}, fmt.Errorf("%s: %w", kind, err)
	}
	// Said as yaml keys: what a scenario's author writes.
	names := map[string]string{}
	for _, p := range k.Params {
		names[p.GoName] = p.Name
	}
	k.Doc = yamlNames(k.Doc, names)
	for i := range k.Params {
		k.Params[i].Doc = yamlNames(k.Params[i].Doc, names)
	}
	return k, nil
}

// fields appends the parameters of struct t (at index path at) to out, in
// order, walking into embedded structs as the scenario loader does.
func fields(t reflect.Type, at []int, docs map[string]typeDocs, out *[]Param) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		index := append(append([]int{}, at...), i)
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && (name == "" || strings.Contains(opts, "inline")) {
			if err := fields(sf.Type, index, docs, out); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		doc := docs[t.Name()].fields[sf.Name]
		if doc == "" {
			return fmt.Errorf("parameter %s (%s.%s) has no doc comment", name, t.Name(), sf.Name)
		}
		p := Param{Name: name, GoName: sf.Name, Index: index, Type: sf.Type, Doc: doc}
		if typeOf(p.Type).key == "" {
			return fmt.Errorf("parameter %s: the schema cannot describe a %s (string, bool, integer, float or time.Duration)", name, p.Type)
		}
		if err := p.constraints(sf.Tag.Get("jsonschema")); err != nil {
			return fmt.Errorf("parameter %s: %w", name, err)
		}
		*out = append(*out, p)
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// constraints reads a jsonschema tag: enum=v (repeated), minimum=n,
// maximum=n.
func (p *Param) constraints(tag string) error {
	if tag == "" {
		return nil
	}
	for _, kv := range strings.Split(tag, ",") {
		key, v, _ := strings.Cut(kv, "=")
		switch key {
		case "enum":
			switch {
			case p.Type.Kind() == reflect.String:
				p.Enum = append(p.Enum, v)
			case isInt(p.Type):
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("jsonschema tag: enum %q is not an integer", v)
				}
				p.Enum = append(p.Enum, n)
			default:
				return fmt.Errorf("jsonschema tag: enum on a %s", p.Type)
			}
		case "minimum", "maximum":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || !isInt(p.Type) {
				return fmt.Errorf("jsonschema tag: %s=%s wants an integer field and value", key, v)
			}
			if key == "minimum" {
				p.Minimum = &n
			} else {
				p.Maximum = &n
			}
		default:
			return fmt.Errorf("jsonschema tag: unknown key %q (known: enum, minimum, maximum)", key)
		}
	}
	return nil
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return t != durationType
	}
	return false
}

// leading says the doc's first word, the Go name, as the name the user
// knows: "Crash kills …" → "crash kills …".
func leading(doc, goName, name string) string {
	if rest, ok := strings.CutPrefix(doc, goName); ok && (rest == "" || rest[0] == ' ') {
		return name + rest
	}
	return doc
}

var word = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)

// yamlNames replaces every whole word of doc that is one of the struct's
// Go field names with its yaml key.
func yamlNames(doc string, names map[string]string) string {
	return word.ReplaceAllStringFunc(doc, func(w string) string {
		if n, ok := names[w]; ok {
			return n
		}
		return w
	})
}
