package faults

import (
	"reflect"
	"strings"
)

// A kind's parameters are the exported, yaml-tagged fields of its struct.
// Their doc comments are the schema's help, and a jsonschema tag
// (`jsonschema:"enum=a,enum=b"`, `minimum=n`, `maximum=n`) says what
// Validate accepts: scenarios/schema.json is generated from both
// (internal/faultschema), and a test holds each Validate to its tags.

// enumOf is the enum of a field's jsonschema tag: the one list of a
// parameter's values, for Validate and the schema alike.
func enumOf(v any, field string) []string {
	f, ok := reflect.TypeOf(v).FieldByName(field)
	if !ok {
		panic("faults: no field " + field)
	}
	var out []string
	for _, kv := range strings.Split(f.Tag.Get("jsonschema"), ",") {
		if val, ok := strings.CutPrefix(kv, "enum="); ok {
			out = append(out, val)
		}
	}
	return out
}
