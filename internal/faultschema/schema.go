package faultschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/idemchaos/idemchaos/faults"
)

// Update returns schema, the scenario schema (scenarios/schema.json), with
// the parts the faults registry owns generated from it and from the doc
// comments of the faults package's source in dir: $defs/params-<kind> for
// every registered kind, and $defs/fault's kind enum, its description and
// its allOf choosing the params schema by kind. Everything else is kept as
// it was, byte for byte: the file is indented as encoding/json indents,
// and a params definition that exists keeps its place.
func Update(schema []byte, dir string) ([]byte, error) {
	docs, err := readDocs(dir)
	if err != nil {
		return nil, err
	}
	kinds := faults.Kinds()
	slices.Sort(kinds)
	var ks []Kind
	for _, name := range kinds {
		k, err := params(name, docs)
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	root, err := decodeObject(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	defs, err := root.object("$defs")
	if err != nil {
		return nil, err
	}
	fault, err := defs.object("fault")
	if err != nil {
		return nil, err
	}
	props, err := fault.object("properties")
	if err != nil {
		return nil, err
	}
	if err := props.set("kind", kindSchema(ks)); err != nil {
		return nil, err
	}
	if err := fault.set("allOf", choice(ks)); err != nil {
		return nil, err
	}
	if err := fault.encodeInto("properties", props); err != nil {
		return nil, err
	}
	if err := defs.encodeInto("fault", fault); err != nil {
		return nil, err
	}
	var generated []member
	for _, k := range ks {
		b, err := encode(paramsSchema(k))
		if err != nil {
			return nil, err
		}
		generated = append(generated, member{key: "params-" + k.Name, val: b})
	}
	defs.replacePrefix("params-", generated)
	if err := root.encodeInto("$defs", defs); err != nil {
		return nil, err
	}
	compact, err := root.encode()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// obj is a JSON object whose members keep their order; values stay raw.
type obj []member

type member struct {
	key string
	val json.RawMessage
}

// A generated schema keeps its keys in the order written here.
type ordered []member

func kindSchema(ks []Kind) ordered {
	var names, params []string
	for _, k := range ks {
		names = append(names, k.Name)
		var ps []string
		for _, p := range k.Params {
			ps = append(ps, p.Name)
		}
		params = append(params, k.Name+" {"+strings.Join(ps, ", ")+"}")
	}
	return ordered{
		{key: "type", val: mustEncode("string")},
		{key: "enum", val: mustEncode(names)},
		{key: "description", val: mustEncode("The fault kind. Parameters: " + strings.Join(params, "; ") + ".")},
	}
}

// choice is the allOf that gives each kind's params its own schema.
func choice(ks []Kind) []ordered {
	var out []ordered
	for _, k := range ks {
		out = append(out, ordered{
			{key: "if", val: mustEncode(ordered{
				{key: "properties", val: mustEncode(ordered{{key: "kind", val: mustEncode(ordered{{key: "const", val: mustEncode(k.Name)}})}})},
				{key: "required", val: mustEncode([]string{"kind"})},
			})},
			{key: "then", val: mustEncode(ordered{
				{key: "properties", val: mustEncode(ordered{{key: "params", val: mustEncode(ordered{{key: "$ref", val: mustEncode("#/$defs/params-" + k.Name)}})}})},
			})},
		})
	}
	return out
}

func paramsSchema(k Kind) ordered {
	var props ordered
	for _, p := range k.Params {
		props = append(props, member{key: p.Name, val: mustEncode(paramSchema(p))})
	}
	return ordered{
		{key: "type", val: mustEncode([]string{"object", "null"})},
		{key: "additionalProperties", val: mustEncode(false)},
		{key: "description", val: mustEncode(k.Doc)},
		{key: "properties", val: mustEncode(props)},
	}
}

func paramSchema(p Param) ordered {
	s := ordered{typeOf(p.Type)}
	if p.Enum != nil {
		s = append(s, member{key: "enum", val: mustEncode(p.Enum)})
	}
	if p.Minimum != nil {
		s = append(s, member{key: "minimum", val: mustEncode(*p.Minimum)})
	}
	if p.Maximum != nil {
		s = append(s, member{key: "maximum", val: mustEncode(*p.Maximum)})
	}
	return append(s, member{key: "description", val: mustEncode(p.Doc)})
}

// typeOf is the schema of a Go type ("" key for one it cannot say).
func typeOf(t reflect.Type) member {
	switch {
	case t == durationType:
		return member{key: "$ref", val: mustEncode("#/$defs/duration")}
	case t.Kind() == reflect.String:
		return member{key: "type", val: mustEncode("string")}
	case t.Kind() == reflect.Bool:
		return member{key: "type", val: mustEncode("boolean")}
	case isInt(t):
		return member{key: "type", val: mustEncode("integer")}
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		return member{key: "type", val: mustEncode("number")}
	}
	return member{}
}

// MarshalJSON writes the members in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	return obj(o).encode()
}

func mustEncode(v any) json.RawMessage {
	b, err := encode(v)
	if err != nil {
		panic("faultschema: " + err.Error())
	}
	return b
}

// encode writes v compact, without encoding/json's HTML escapes (the
// committed file has "→" and "<" as themselves).
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func decodeObject(b []byte) (obj, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var o obj
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{key: t.(string), val: v})
	}
	return o, nil
}

// object decodes the member key, an object.
func (o obj) object(key string) (obj, error) {
	for _, m := range o {
		if m.key == key {
			return decodeObject(m.val)
		}
	}
	return nil, fmt.Errorf("schema: no %q object", key)
}

// set replaces the member key with v, where it is.
func (o obj) set(key string, v any) error {
	for i := range o {
		if o[i].key == key {
			b, err := encode(v)
			o[i].val = b
			return err
		}
	}
	return fmt.Errorf("schema: no %q to replace", key)
}

// encodeInto writes the object child back as the member key.
func (o obj) encodeInto(key string, child obj) error {
	b, err := child.encode()
	if err != nil {
		return err
	}
	return o.set(key, json.RawMessage(b))
}

// replacePrefix replaces the members whose key has prefix with ms, where
// the first of them was (at the end if none was).
func (o *obj) replacePrefix(prefix string, ms []member) {
	at := -1
	var kept obj
	for _, m := range *o {
		if strings.HasPrefix(m.key, prefix) {
			if at < 0 {
				at = len(kept)
			}
			continue
		}
		kept = append(kept, m)
	}
	if at < 0 {
		at = len(kept)
	}
	*o = slices.Insert(kept, at, ms...)
}

func (o obj) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := encode(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.val); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
