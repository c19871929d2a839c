package scenarios

import (
	"errors"
	"fmt"
	"sort"
)

// LoadFaults reads a fault file (`idemchaos record --faults`): a YAML
// mapping holding only a `faults:` list, written as a client scenario's
// faults are and checked by the same rules — kinds, parameters, when —
// so only kinds that act on a client's path are taken. Problems come back
// as an [*Errors], each at file:line:col.
func LoadFaults(path string) ([]FaultSpec, error) {
	data, err := ReadFile(path)
	var errs *Errors
	if errors.As(err, &errs) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("load faults: %w", err)
	}
	return ParseFaults(path, data)
}

// ParseFaults is [LoadFaults] on data, named name in positions.
func ParseFaults(name string, data []byte) ([]FaultSpec, error) {
	t := newTree(name)
	body, ok := t.parse(data)
	if ok {
		t.val = t.conv(body, "", 0)
		root, isMap := t.val.(map[string]any)
		switch {
		case !isMap:
			t.errorf(t.posOf(""), "a fault file is a mapping with a faults: list")
		case root["faults"] == nil:
			t.errorf(t.posOf(""), "faults: missing: a fault file holds a faults: list, as a client scenario's")
		default:
			var other []string
			for k := range root {
				if k != "faults" {
					other = append(other, k)
				}
			}
			sort.Strings(other)
			for _, k := range other {
				t.errorf(t.keyPos("/"+k), "%s: a fault file holds only faults: (the traffic is the recorded client's)", k)
				delete(root, k) // the faults are still checked
			}
			// Checked as a client scenario's faults: the synthetic
			// client block makes the client-path rules apply; it has no
			// place in the file, so no position.
			root["client"] = map[string]any{"command": []any{"idemchaos-record"}}
			t.clientTarget()
			n := len(t.errs.List)
			t.expandEnv()
			if len(t.errs.List) == n {
				t.validateSchema()
				t.checkSemantics()
			}
		}
	}
	if len(t.errs.List) > 0 {
		return nil, t.finish()
	}
	s, err := t.decode()
	if err != nil {
		t.wrapf(t.posOf(""), err, "cannot decode the checked fault file (please report this): %v", err)
		return nil, t.finish()
	}
	return s.Faults, nil
}
