package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The body variants of an [Intent]: how its rendered body is changed
// before it is sent. They probe how a service fingerprints payloads.
const (
	// VariantReserialised sends the same JSON written differently: keys in
	// reverse order, spaces after ':' and ','. The same payload under a
	// canonical fingerprint, a different one under a strict (bytes) one.
	VariantReserialised = "reserialised"
	// VariantRetypedString turns the first number into a string
	// ("qty":1 → "qty":"1"): a different payload under every fingerprint.
	VariantRetypedString = "retyped-string"
	// VariantRetypedBool turns the first number that is 0 or 1 into a
	// boolean ("qty":1 → "qty":true), the one change a loose comparison
	// takes for equal: a different payload under every fingerprint.
	VariantRetypedBool = "retyped-bool"
	// variantWrappedPrefix + n wraps the body in {"reused_by":n,"was":…}:
	// the last resort for a reuse when nothing in the body can vary.
	variantWrappedPrefix = "wrapped-"
)

// VariantWrapped is the variant that wraps a body to make it differ, n
// telling apart several wrappings of one body.
func VariantWrapped(n int) string { return variantWrappedPrefix + strconv.Itoa(n) }

// ApplyVariant returns body changed by variant; a variant that does not
// apply (not JSON, no number) leaves it as it is.
func ApplyVariant(variant string, body []byte) []byte {
	switch {
	case variant == "":
		return body
	case variant == VariantReserialised:
		v, err := parseOrdered(body)
		if err != nil {
			return body
		}
		var b bytes.Buffer
		writeReversed(&b, v)
		return b.Bytes()
	case variant == VariantRetypedString || variant == VariantRetypedBool:
		v, err := parseOrdered(body)
		if err != nil || !retype(&v, variant) {
			return body
		}
		var b bytes.Buffer
		writeCompact(&b, v)
		return b.Bytes()
	case strings.HasPrefix(variant, variantWrappedPrefix):
		n := strings.TrimPrefix(variant, variantWrappedPrefix)
		if len(body) > 1 && body[0] == '{' && json.Valid(body) {
			return []byte(fmt.Sprintf(`{"reused_by":%s,"was":%s}`, n, body))
		}
		return append(append([]byte{}, body...), " (reused by "+n+")"...)
	}
	return body
}

// ordered is a JSON value that keeps its members' order and its numbers'
// spelling: a json.Number, string, bool, nil, []ordered or []member.
type ordered struct{ v any }

type member struct {
	key string
	val ordered
}

func parseOrdered(b []byte) (ordered, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeOrdered(d)
	if err != nil {
		return v, err
	}
	if d.More() {
		return v, fmt.Errorf("trailing data")
	}
	return v, nil
}

func decodeOrdered(d *json.Decoder) (ordered, error) {
	tok, err := d.Token()
	if err != nil {
		return ordered{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			ms := []member{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return ordered{}, err
				}
				v, err := decodeOrdered(d)
				if err != nil {
					return ordered{}, err
				}
				ms = append(ms, member{k.(string), v})
			}
			_, err := d.Token()
			return ordered{ms}, err
		case '[':
			xs := []ordered{}
			for d.More() {
				v, err := decodeOrdered(d)
				if err != nil {
					return ordered{}, err
				}
				xs = append(xs, v)
			}
			_, err := d.Token()
			return ordered{xs}, err
		}
	}
	return ordered{tok}, nil
}

// retype changes the first number found (depth first, in order) into a
// string or a boolean; it reports whether there was one.
func retype(o *ordered, variant string) bool {
	switch v := o.v.(type) {
	case json.Number:
		if variant == VariantRetypedString {
			o.v = v.String()
			return true
		}
		// true == 1 and false == 0 only: another number would be a new
		// value, not a new type.
		switch f, _ := v.Float64(); f {
		case 0, 1:
			o.v = f == 1
			return true
		}
		return false
	case []member:
		for i := range v {
			if retype(&v[i].val, variant) {
				return true
			}
		}
	case []ordered:
		for i := range v {
			if retype(&v[i], variant) {
				return true
			}
		}
	}
	return false
}

func writeScalar(b *bytes.Buffer, v any) {
	if n, ok := v.(json.Number); ok {
		b.WriteString(n.String())
		return
	}
	// No HTML escaping: the bytes stay as close to the template's as JSON allows.
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	b.Truncate(b.Len() - 1) // Encode's newline
}

func writeCompact(b *bytes.Buffer, o ordered) {
	switch v := o.v.(type) {
	case []member:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeScalar(b, m.key)
			b.WriteByte(':')
			writeCompact(b, m.val)
		}
		b.WriteByte('}')
	case []ordered:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCompact(b, x)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// writeReversed writes o with every object's members in reverse order and
// a space after every ':' and ','.
func writeReversed(b *bytes.Buffer, o ordered) {
	switch v := o.v.(type) {
	case []member:
		b.WriteString("{ ")
		for i := len(v) - 1; i >= 0; i-- {
			writeScalar(b, v[i].key)
			b.WriteString(": ")
			writeReversed(b, v[i].val)
			if i > 0 {
				b.WriteString(", ")
			}
		}
		b.WriteString(" }")
	case []ordered:
		b.WriteString("[ ")
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeReversed(b, x)
		}
		b.WriteString(" ]")
	default:
		writeScalar(b, v)
	}
}
