package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Load reads, validates and decodes the scenario file at path. An invalid
// file gives an [*Errors] listing every problem as "file:line:col: message";
// an unreadable one gives the os error.
func Load(path string) (*Scenario, error) {
	data, err := ReadFile(path)
	var errs *Errors
	if errors.As(err, &errs) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse validates and decodes one scenario; name is the file name used in
// error positions and as the default scenario name. It checks, in order:
// YAML syntax (a syntax error stops there), ${VAR} references in target.url,
// effects.dsn and effects.url (replaced from the environment; an unset
// variable without a ${VAR:-default} stops there), the JSON Schema ([Schema]), the
// fault kinds' parameters, and the semantic rules no schema can say (hooks
// for process faults on url targets, step expectations naming the
// scenario's invariants, ...). Every problem found is reported, sorted by
// position, in one [*Errors]. On success the defaults documented on each
// field are filled in, each step is complete (see [Step]), and File is name.
//
// Parse never panics, whatever the input (it is fuzzed).
func Parse(name string, data []byte) (*Scenario, error) {
	t := newTree(name)
	body, ok := t.parse(data)
	if ok {
		t.val = t.conv(body, "", 0)
		t.emptySections()
		t.expandEnv()
		if len(t.errs.List) == 0 {
			t.validateSchema()
			t.checkSemantics()
		}
	}
	if len(t.errs.List) > 0 {
		return nil, t.finish()
	}
	s, err := t.decode()
	if err != nil {
		// The checks above should make this unreachable; say so plainly.
		t.wrapf(t.posOf(""), err, "cannot decode the checked scenario (please report this): %v", err)
		return nil, t.finish()
	}
	s.File = name
	s.Env = t.env
	s.at = t.positions()
	s.fillDefaults(name)
	if m := s.Contract.MaxKeyLength; m > 0 {
		if n := s.KeyLength(MaxValidatedSeed); n > m {
			t.errorf(t.posOf("/contract/max_key_length"), "contract.max_key_length: this scenario's keys are up to %d characters (%s, for seeds up to %d), longer than %d: the service would merge the intents whose keys it cuts alike; shorten the scenario's name or its intents",
				n, s.LongestKey(MaxValidatedSeed), MaxValidatedSeed, m)
			return nil, t.finish()
		}
	}
	return s, nil
}

// positions are the file positions [Scenario.Where] answers with, of the
// settings present in the file.
func (t *tree) positions() map[string]string {
	out := map[string]string{}
	for field, key := range placed {
		p := "/" + strings.ReplaceAll(field, ".", "/")
		if !t.has(p) {
			continue
		}
		at := t.posOf(p)
		if key {
			at = t.keyPos(p)
		}
		out[field] = fmt.Sprintf("%s:%d:%d", t.file, at.line, at.col)
	}
	return out
}

// parse parses the YAML and returns the one document's body.
func (t *tree) parse(data []byte) (ast.Node, bool) {
	// Some Windows editors start UTF-8 files with a byte order mark; YAML
	// allows it, goccy/go-yaml would read it as part of the first key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if p, msg, ok := prescan(data); !ok {
		t.errorf(p, "%s", msg)
		return nil, false
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		t.syntaxError(err)
		return nil, false
	}
	var bodies []ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		switch d.Body.(type) {
		case *ast.CommentGroupNode, *ast.CommentNode, *ast.NullNode:
			continue // nothing but comments, or an explicit null (~)
		}
		bodies = append(bodies, d.Body)
	}
	switch {
	case len(bodies) == 0:
		t.errorf(pos{1, 1}, "the file is empty: a scenario needs at least a target (reference: {} for the bundled service, or url: for yours)")
		return nil, false
	case len(bodies) > 1:
		p, _ := nodePos(bodies[1])
		t.errorf(p, "a second YAML document: a scenario file holds exactly one (remove the --- separator or split the file)")
		return nil, false
	}
	if p, ok := nodePos(bodies[0]); ok {
		t.at[""] = p
	}
	return bodies[0], true
}

func (t *tree) syntaxError(err error) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := pos{1, 1}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			p = pos{tk.Position.Line, max(tk.Position.Column, 1)}
		}
		t.wrapf(p, err, "YAML syntax error: %s", syntaxHint(ye.GetMessage()))
		return
	}
	t.wrapf(pos{1, 1}, err, "YAML syntax error: %v", err)
}

// sections are the mappings and lists a file may leave empty ("traffic:"
// with every line under it commented out): an empty one means defaults.
var sections = [][]string{
	{"target"}, {"target", "reference"}, {"endpoint"}, {"endpoint", "headers"}, {"endpoint", "tokens"},
	{"contract"}, {"traffic"}, {"traffic", "retry"}, {"effects"}, {"hooks"},
	{"faults"}, {"faults", "*", "params"}, {"faults", "*", "when"}, {"invariants"}, {"steps"},
	{"steps", "*", "traffic"}, {"steps", "*", "traffic", "retry"},
	{"steps", "*", "faults"}, {"steps", "*", "faults", "*", "params"}, {"steps", "*", "faults", "*", "when"},
}

// emptySections replaces a null section by an empty mapping or list.
func (t *tree) emptySections() {
	for _, sec := range sections {
		setEmpty(t.val, sec)
	}
}

func setEmpty(v any, path []string) {
	if len(path) == 0 {
		return
	}
	switch x := v.(type) {
	case []any:
		if path[0] == "*" {
			for _, item := range x {
				setEmpty(item, path[1:])
			}
		}
	case map[string]any:
		child, ok := x[path[0]]
		if !ok {
			return
		}
		if len(path) > 1 {
			setEmpty(child, path[1:])
			return
		}
		if child == nil {
			switch path[0] {
			case "faults", "invariants", "steps":
				x[path[0]] = []any{}
			default:
				x[path[0]] = map[string]any{}
			}
		}
	}
}

// syntaxHint adds what to do to the parser's message for the usual
// mistakes. It only decorates: an unknown message passes through as is.
func syntaxHint(msg string) string {
	switch {
	case strings.Contains(msg, "'\t'"):
		return strings.ReplaceAll(msg, "'\t'", "'\\t'") + " (indent with spaces, not tabs)"
	case strings.Contains(msg, "is not allowed in this context"):
		return msg + " (check this line's indentation against the lines above)"
	case strings.Contains(msg, "could not find"):
		return msg + " (a quote or bracket opened here is never closed)"
	}
	return msg
}

// decode turns the checked tree into a Scenario: step traffic is merged
// over the scenario's (absent step faults are inherited in one place,
// [Scenario.EffectiveSteps]), then the
// values go through JSON (durations stay strings) into the typed structs.
func (t *tree) decode() (*Scenario, error) {
	root, _ := t.val.(map[string]any)
	steps, _ := root["steps"].([]any)
	base, _ := root["traffic"].(map[string]any)
	for _, st := range steps {
		sm, _ := st.(map[string]any)
		if sm == nil {
			continue
		}
		own, _ := sm["traffic"].(map[string]any)
		sm["traffic"] = mergeMaps(base, own)
	}
	data, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("decode scenario: %w", err)
	}
	var s Scenario
	if err := yaml.UnmarshalWithOptions(data, &s); err != nil {
		return nil, fmt.Errorf("decode scenario: %w", err)
	}
	for i := range s.Faults {
		s.Faults[i].Node = t.node[ptr("/faults", fmt.Sprint(i), "params")]
		s.Faults[i].proto = t.built[ptr("/faults", fmt.Sprint(i))]
	}
	for i := range s.Steps {
		own := ptr("/steps", fmt.Sprint(i), "faults")
		for j := range s.Steps[i].Faults {
			s.Steps[i].Faults[j].Node = t.node[ptr(own, fmt.Sprint(j), "params")]
			s.Steps[i].Faults[j].proto = t.built[ptr(own, fmt.Sprint(j))]
		}
	}
	return &s, nil
}

// mergeMaps returns base with over's keys set over it, one level of nested
// mappings deep (traffic.retry), without changing either.
func mergeMaps(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			v = mergeMaps(bm, om)
		}
		out[k] = v
	}
	return out
}

// defaultName is the file's base name without its extension.
func defaultName(file string) string {
	base := filepath.Base(file)
	if base == "." || base == string(filepath.Separator) {
		return "scenario"
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}
