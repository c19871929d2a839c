package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/scenarios"
)

// ReadPlanFor reads a plan saved as JSON (next to a shrunk failure's history,
// replayed with `idemchaos run --plan`) and checks it against step step of
// s, where it will run: every fault it names must be one of that step's
// faults, of the kind it says, aimed or timed as the plan uses it, and
// every intent must be sendable. A hand-edited plan is refused with the
// file, where in it, and what was expected — a fault it names wrongly used
// to be ignored, or to take the place of another.
func ReadPlanFor(path string, s *scenarios.Scenario, step int) (Plan, error) {
	var p Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read plan: %w", err)
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%s%s: not a plan: %s", path, jsonPos(b, err), jsonReason(err))
	}
	if dec.More() {
		return p, fmt.Errorf("%s%s: not a plan: more than one JSON value", path, jsonPos(b, &json.SyntaxError{Offset: dec.InputOffset()}))
	}
	if err := checkPlan(p, s, step); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// checkPlan checks a plan against the faults of step i of s.
func checkPlan(p Plan, s *scenarios.Scenario, i int) error {
	steps := s.EffectiveSteps()
	if i >= len(steps) {
		return fmt.Errorf("scenario %s has no step %d", s.Name, i+1)
	}
	fs, err := buildFaults(s, i)
	if err != nil {
		return err
	}
	var aimed, timed []string
	for fi, f := range fs {
		if f.aimed {
			aimed = append(aimed, faultID(f.spec.Kind, fi))
		} else {
			timed = append(timed, faultID(f.spec.Kind, fi))
		}
	}
	expected := func(ids []string) string {
		if len(ids) == 0 {
			return "none: the step has no such fault"
		}
		return "one of " + strings.Join(ids, ", ")
	}
	where := fmt.Sprintf("step %d of %s", i+1, s.Name)
	if len(p.Intents) == 0 && len(p.Timed) == 0 && p.Note == "" {
		return errors.New("the plan is empty: no Intents, no Timed faults")
	}
	ids := map[string]bool{}
	for n, in := range p.Intents {
		at := fmt.Sprintf("Intents[%d] (%s)", n, in.ID)
		switch {
		case in.ID == "":
			return fmt.Errorf("Intents[%d]: no ID", n)
		case ids[in.ID] && in.Faults != nil:
			return fmt.Errorf("%s: a second intent with this ID aims faults", at)
		case in.Method == "" || strings.ContainsAny(in.Method, " \t\r\n"):
			return fmt.Errorf("%s: Method %q is not an HTTP method", at, in.Method)
		case in.Clicks < 0 || in.Spread < 0 || in.At < 0:
			return fmt.Errorf("%s: Clicks, Spread and At cannot be negative", at)
		}
		ids[in.ID] = true
		if _, err := url.Parse("http://h" + in.Path); err != nil || !strings.HasPrefix(in.Path, "/") {
			return fmt.Errorf("%s: Path %q is not a request path", at, clipText(in.Path))
		}
		attempts := make([]int, 0, len(in.Faults))
		for a := range in.Faults {
			attempts = append(attempts, a)
		}
		slices.Sort(attempts)
		for _, a := range attempts {
			id := in.Faults[a]
			if a < 1 {
				return fmt.Errorf("%s: Faults[%d]: attempts count from 1", at, a)
			}
			if !slices.Contains(aimed, id) {
				return fmt.Errorf("%s: Faults[%d]: %q is not an aimed fault of %s (expected %s)", at, a, clipText(id), where, expected(aimed))
			}
		}
	}
	for n, tf := range p.Timed {
		id := faultID(tf.Kind, tf.Fault)
		if !slices.Contains(timed, id) {
			return fmt.Errorf("Timed[%d]: %q is not a timed fault of %s (expected %s)", n, clipText(id), where, expected(timed))
		}
		if tf.At < 0 || tf.For < 0 {
			return fmt.Errorf("Timed[%d]: At and For cannot be negative", n)
		}
	}
	return nil
}

// jsonPos is ":line:col" of a decoding error's offset in b, or "".
func jsonPos(b []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		off = int64(bytes.Index(b, []byte(f))) + 1 // the key's first letter
	}
	if off < 1 || off > int64(len(b)) {
		return ""
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return ":" + strconv.Itoa(line) + ":" + strconv.Itoa(max(col, 1))
}

// jsonReason is the decoder's message, with the Go type names it uses
// for what a plan's author knows as JSON.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return clipText(strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "a number"
	case k == "string":
		return "a string"
	case k == "slice":
		return "a list"
	case k == "map", k == "struct":
		return "an object"
	}
	return k
}

// clipText keeps a quoted value from the file short enough for one line.
func clipText(s string) string {
	r := []rune(s)
	if len(r) <= 60 {
		return s
	}
	return string(r[:60]) + "…"
}
