package scenarios

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/faults"
	"github.com/idemchaos/idemchaos/internal/suggest"
)

// Build returns the fault the spec describes: a fresh value of its kind
// (from [faults.New]) with Params decoded into its typed fields and
// Validate run, so its defaults are filled in. Each call returns a new
// value: nothing is shared between steps or runs. Errors wrap
// [faults.ErrUnknownKind] or [faults.ErrInvalidParams].
//
// Params are decoded by field name (the yaml tags), strictly: an unknown
// parameter or a value of the wrong type is an error. Durations are
// strings ("500ms").
func (f FaultSpec) Build() (faults.Fault, error) {
	if f.proto != nil && f.proto.Kind() == f.Kind {
		return faults.Clone(f.proto), nil
	}
	fault, err := faults.New(f.Kind)
	if err != nil {
		return nil, fmt.Errorf("build fault: %w", err)
	}
	var errs []error
	for _, p := range decodeParams(fault, f.Params) {
		msg := p.text(f.Kind, "params")
		if !p.unknown {
			msg = "params." + p.key + ": " + msg
		}
		errs = append(errs, fmt.Errorf("%w: %s: %s", faults.ErrInvalidParams, f.Kind, msg))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("build fault: %w", errors.Join(errs...))
	}
	if err := fault.Validate(); err != nil {
		return nil, fmt.Errorf("build fault: %w", err)
	}
	return fault, nil
}

// paramField is one parameter of a fault kind: a yaml-tagged exported
// field, found through embedded structs (faults share parameter sets by
// embedding an unexported struct, which goccy/go-yaml cannot set; reflect
// can, which is why the decoding is done here).
type paramField struct {
	name  string
	index []int
	typ   reflect.Type
}

func paramFields(t reflect.Type) []paramField {
	var out []paramField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && (name == "" || strings.Contains(opts, "inline")) {
			for _, f := range paramFields(sf.Type) {
				f.index = append([]int{i}, f.index...)
				out = append(out, f)
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out = append(out, paramField{name: name, index: []int{i}, typ: sf.Type})
	}
	return out
}

// ParamNames lists the parameters a fault kind takes, in name order (nil
// for an unknown kind).
func ParamNames(kind string) []string {
	f, err := faults.New(kind)
	if err != nil {
		return nil
	}
	var names []string
	for _, pf := range paramFields(reflect.TypeOf(f).Elem()) {
		names = append(names, pf.name)
	}
	sort.Strings(names)
	return names
}

// paramProblem is one parameter that could not be decoded.
type paramProblem struct {
	key     string
	unknown bool     // the key names no parameter
	allowed []string // the kind's parameters, for unknown keys
	msg     string   // what is wrong with the value
}

// text says what is wrong; where names the params mapping.
func (p paramProblem) text(kind, where string) string {
	if !p.unknown {
		return p.msg
	}
	if len(p.allowed) == 0 {
		return fmt.Sprintf("unknown key %q in %s (%s takes no parameters)", p.key, where, kind)
	}
	return fmt.Sprintf("unknown key %q in %s (%s takes: %s)%s", p.key, where, kind, strings.Join(p.allowed, ", "), suggest.DidYouMean(p.key, p.allowed))
}

// decodeParams sets f's parameter fields from params and returns every
// problem, sorted by key.
func decodeParams(f faults.Fault, params map[string]any) []paramProblem {
	rv := reflect.ValueOf(f)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return []paramProblem{{key: "", msg: fmt.Sprintf("fault kind %s is not a struct pointer", f.Kind())}}
	}
	fields := paramFields(rv.Elem().Type())
	byName := make(map[string]paramField, len(fields))
	var allowed []string
	for _, pf := range fields {
		byName[pf.name] = pf
		allowed = append(allowed, pf.name)
	}
	sort.Strings(allowed)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []paramProblem
	for _, k := range keys {
		pf, ok := byName[k]
		if !ok {
			out = append(out, paramProblem{key: k, unknown: true, allowed: allowed})
			continue
		}
		if msg := setParam(rv.Elem().FieldByIndex(pf.index), params[k]); msg != "" {
			out = append(out, paramProblem{key: k, msg: msg})
		}
	}
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

// setParam sets dst from a plain value and returns "" or what is wrong.
func setParam(dst reflect.Value, v any) string {
	if !dst.CanSet() {
		return "cannot be set"
	}
	if v == nil {
		return "" // "key:" with no value keeps the default
	}
	if dst.Type() == durationType {
		s, ok := v.(string)
		if !ok {
			return "expected a duration (e.g. 500ms, 2s, 1m), got " + describe(v)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Sprintf("%q is not a duration (e.g. 500ms, 2s, 1m)", s)
		}
		dst.SetInt(int64(d))
		return ""
	}
	switch dst.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return "expected a string, got " + describe(v)
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return "expected true or false, got " + describe(v)
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := asInt(v)
		if !ok || dst.OverflowInt(n) {
			return "expected an integer, got " + describe(v)
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := asInt(v)
		if !ok || n < 0 || dst.OverflowUint(uint64(n)) {
			return "expected a non-negative integer, got " + describe(v)
		}
		dst.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		x, ok := asFloat(v)
		if !ok {
			return "expected a number, got " + describe(v)
		}
		dst.SetFloat(x)
	case reflect.Slice:
		if dst.Type().Elem().Kind() != reflect.String {
			return "unsupported parameter type " + dst.Type().String()
		}
		list, ok := v.([]any)
		if !ok {
			return "expected a list of strings, got " + describe(v)
		}
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, x := range list {
			s, ok := x.(string)
			if !ok {
				return fmt.Sprintf("item %d: expected a string, got %s", i, describe(x))
			}
			out.Index(i).SetString(s)
		}
		dst.Set(out)
	default:
		return "unsupported parameter type " + dst.Type().String()
	}
	return ""
}

func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case uint64:
		return float64(v), true
	}
	return 0, false
}
