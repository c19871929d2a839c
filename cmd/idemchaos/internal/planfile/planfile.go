// Package planfile reads a plan saved as JSON (next to a shrunk failure's
// history) for `idemchaos run --plan`, and refuses a hand edit the
// scenario's step cannot run, at the file's line and column. It is the
// command's: a Go test replays a plan through harness.RunOptions.Plans.
package planfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/scenarios"
)

// Read reads a plan saved as JSON (next to a shrunk failure's history,
// replayed with `idemchaos run --plan`) and checks it against step step of
// s, where it will run: every fault it names must be one of that step's
// faults, of the kind it says, aimed or timed as the plan uses it, and
// every intent must be sendable. A hand-edited plan is refused with the
// file, where in it, and what was expected — a fault it names wrongly used
// to be ignored, or to take the place of another.
func Read(path string, s *scenarios.Scenario, step int) (harness.Plan, error) {
	var p harness.Plan
	b, err := readPlanFile(path)
	if err != nil {
		return p, err
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
		var at *planError
		if errors.As(err, &at) {
			return p, fmt.Errorf("%s%s: %w", path, elementPos(b, at.list, at.index), err)
		}
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Bounds on a plan file, documented with the scenario limits
// (docs/scenarios.md): a plan is what a step of a valid scenario draws,
// so it holds no more than such a step can.
const (
	// maxPlanBytes bounds the file: a million intents are about 300 MB of
	// indented JSON; past it the file is not a saved plan.
	maxPlanBytes = 512 << 20
	// maxPlanClicks is double-click's largest copies.
	maxPlanClicks = 100
	// maxPlanAttempt is the largest retry.max_attempts: an aimed fault at
	// a later attempt can never fire.
	maxPlanAttempt = 1000
	// maxPlanTime bounds At, Spread and For: a plan that waits a year
	// before its first intent is a hang, not a replay.
	maxPlanTime = time.Hour
)

// planMethods are the methods a scenario's endpoint may have: a plan sends
// writes only (a GET or CONNECT is no idempotent write, and CONNECT would
// turn the service proxy into a tunnel).
var planMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// readPlanFile reads a plan file, refusing one past maxPlanBytes after
// reading one byte more (/dev/zero costs no more than the bound).
func readPlanFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if len(b) > maxPlanBytes {
		return nil, fmt.Errorf("%s:1:1: not a plan: larger than %d MiB", path, maxPlanBytes>>20)
	}
	return b, nil
}

// planError is a problem of one element of the plan's Intents or Timed
// list: the reader turns it into the element's line and column.
type planError struct {
	list  string // "Intents" or "Timed"
	index int
	err   error
}

func (e *planError) Error() string { return e.err.Error() }
func (e *planError) Unwrap() error { return e.err }

// elementPos is ":line:col" of element index of the top-level list named
// list in the JSON b, or "" (b has already decoded as a plan).
func elementPos(b []byte, list string, index int) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key != list {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return ""
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return ""
		}
		for i := 0; dec.More(); i++ {
			var el json.RawMessage
			if dec.Decode(&el) != nil {
				return ""
			}
			if i == index {
				end := int(dec.InputOffset())
				return offsetPos(b, end-len(el))
			}
		}
		return ""
	}
	return ""
}

// offsetPos is ":line:col" of the byte at offset off (0-based) in b.
func offsetPos(b []byte, off int) string {
	if off < 0 || off >= len(b) {
		return ""
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return ":" + strconv.Itoa(line) + ":" + strconv.Itoa(max(col, 1))
}

// checkPlan checks a plan against the faults of step i of s.
func checkPlan(p harness.Plan, s *scenarios.Scenario, i int) error {
	aimed, timed, err := harness.StepFaultIDs(s, i)
	if err != nil {
		return err
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
	if len(p.Intents) > scenarios.MaxPlannedRequests {
		return fmt.Errorf("%d intents: a step plans at most %d requests", len(p.Intents), scenarios.MaxPlannedRequests)
	}
	ids := map[string]bool{}
	requests := 0
	for n, in := range p.Intents {
		at := fmt.Sprintf("Intents[%d] (%s)", n, clipText(in.ID))
		bad := func(format string, args ...any) error {
			return &planError{"Intents", n, fmt.Errorf(format, args...)}
		}
		switch {
		case in.ID == "":
			return bad("Intents[%d]: no ID", n)
		case ids[in.ID] && in.Faults != nil:
			return bad("%s: a second intent with this ID aims faults", at)
		case !slices.Contains(planMethods, in.Method):
			return bad("%s: Method %q: a plan sends %s only", at, clipText(in.Method), strings.Join(planMethods, ", "))
		case in.Clicks < 0 || in.Spread < 0 || in.At < 0:
			return bad("%s: Clicks, Spread and At cannot be negative", at)
		case in.Clicks > maxPlanClicks:
			return bad("%s: Clicks %d: at most %d (double-click's most copies)", at, in.Clicks, maxPlanClicks)
		case in.At > maxPlanTime || in.Spread > maxPlanTime:
			return bad("%s: At and Spread are at most %s", at, maxPlanTime)
		}
		if requests += max(in.Clicks, 1); requests > scenarios.MaxPlannedRequests {
			return bad("%s: the plan's intents and their clicks are more than the %d requests a step plans", at, scenarios.MaxPlannedRequests)
		}
		ids[in.ID] = true
		if _, err := url.Parse("http://h" + in.Path); err != nil || !strings.HasPrefix(in.Path, "/") {
			return bad("%s: Path %q is not a request path", at, clipText(in.Path))
		}
		attempts := make([]int, 0, len(in.Faults))
		for a := range in.Faults {
			attempts = append(attempts, a)
		}
		slices.Sort(attempts)
		for _, a := range attempts {
			id := in.Faults[a]
			if a < 1 || a > maxPlanAttempt {
				return bad("%s: Faults[%d]: attempts count from 1 to %d", at, a, maxPlanAttempt)
			}
			if !slices.Contains(aimed, id) {
				return bad("%s: Faults[%d]: %q is not an aimed fault of %s (expected %s)", at, a, clipText(id), where, expected(aimed))
			}
		}
	}
	for n, tf := range p.Timed {
		id := tf.Kind + "#" + strconv.Itoa(tf.Fault)
		if !slices.Contains(timed, id) {
			return &planError{"Timed", n, fmt.Errorf("Timed[%d]: %q is not a timed fault of %s (expected %s)", n, clipText(id), where, expected(timed))}
		}
		if tf.At < 0 || tf.For < 0 || tf.At > maxPlanTime || tf.For > maxPlanTime {
			return &planError{"Timed", n, fmt.Errorf("Timed[%d]: At and For are 0 to %s", n, maxPlanTime)}
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
