package history

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// MaxLineBytes bounds one line of a history, so that a corrupt file cannot
// make the reader buffer without limit.
const MaxLineBytes = 64 << 20

// ErrTruncated is wrapped by the [*LineError] a [Reader] returns when the last
// line ends without a newline and is not complete JSON: the producer was cut
// off mid-write. Checkers treat such a history as incomplete.
var ErrTruncated = errors.New("history truncated")

// Reader decodes a history one event at a time. Its memory does not grow
// with the number of events: it holds one line and one parser.
type Reader struct {
	r       *bufio.Reader
	p       fastjson.Parser
	line    int
	long    []byte
	sawMeta bool
	// Skipped counts lines of event types this reader does not know (newer
	// producers may add types; readers skip them).
	Skipped int
}

// NewReader returns a [Reader] that reads JSONL from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Line returns the number of the last line read.
func (r *Reader) Line() int { return r.line }

// Next decodes the next event into e, overwriting all its fields. It returns
// io.EOF after the last event, and a [*LineError] for a malformed line.
func (r *Reader) Next(e *Event) error {
	for {
		v, err := r.nextValue()
		if err != nil {
			return err
		}
		skip, err := r.decode(v, e)
		if err != nil {
			return err
		}
		if !skip {
			return nil
		}
	}
}

// nextValue parses the next non-blank line. The value is valid until the
// next call.
func (r *Reader) nextValue() (*fastjson.Value, error) {
	raw, complete, err := r.nextLine()
	if err != nil {
		return nil, err
	}
	return r.parse(raw, complete)
}

// nextLine returns the next line that is not blank.
func (r *Reader) nextLine() (raw []byte, complete bool, err error) {
	for {
		raw, complete, err = r.readLine()
		if r.line == 1 {
			// Editors on Windows start UTF-8 files with a byte order mark;
			// it says nothing about the events, so the reader accepts it.
			raw = bytes.TrimPrefix(raw, utf8BOM)
		}
		if err != nil || len(bytes.TrimSpace(raw)) > 0 {
			return raw, complete, err
		}
	}
}

// parse parses one line read by nextLine.
func (r *Reader) parse(raw []byte, complete bool) (*fastjson.Value, error) {
	return parseLine(&r.p, raw, complete, r.line)
}

// parseLine parses line number line with p: the messages of every reader.
func parseLine(p *fastjson.Parser, raw []byte, complete bool, line int) (*fastjson.Value, error) {
	v, perr := p.ParseBytes(raw)
	if perr != nil {
		if !complete {
			return nil, &LineError{Line: line, Msg: "truncated: the last line ends without a newline and is not complete JSON", Err: ErrTruncated}
		}
		if d := nesting(raw); d > fastjson.MaxDepth {
			return nil, &LineError{Line: line, Msg: fmt.Sprintf("JSON nested %d levels deep; at most %d are read (an event needs 3)", d, fastjson.MaxDepth), Err: perr}
		}
		return nil, &LineError{Line: line, Msg: "not valid JSON: " + clip(perr.Error(), maxParseMsg), Err: perr}
	}
	if msg := strictLine(raw); msg != "" {
		return nil, &LineError{Line: line, Msg: msg, Err: ErrAmbiguous}
	}
	return v, nil
}

// ErrAmbiguous is wrapped by the [*LineError] of a line both decoders
// refuse though it parses: a duplicated key, a number with a leading
// zero, a raw control byte or bytes not UTF-8 inside a string (see
// strict.go). Two readers could read two events from it.
var ErrAmbiguous = errors.New("ambiguous JSON")

var utf8BOM = []byte("\ufeff")

// maxParseMsg bounds the parser's message in a [LineError]: it quotes the
// unparsed tail of the line, which may be megabytes long.
const maxParseMsg = 120

// clip shortens s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// nesting returns the deepest nesting of objects and arrays in a JSON
// line, skipping strings; it is only asked after a parse failed.
func nesting(b []byte) int {
	depth, deepest, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// decode fills e from v and applies the rules of the stream: the first event
// is a meta event of a known version. skip is true for an event of a type
// this reader does not know.
func (r *Reader) decode(v *fastjson.Value, e *Event) (skip bool, err error) {
	*e = Event{}
	known, err := decodeEvent(v, e)
	if err != nil {
		return false, &LineError{Line: r.line, Msg: err.Error(), Err: err}
	}
	if !r.sawMeta {
		if e.Type != TypeMeta {
			return false, &LineError{Line: r.line, Msg: `the first event must be {"type":"meta","v":1,...}`}
		}
		if e.V != Version {
			return false, &LineError{Line: r.line, Msg: fmt.Sprintf("history version %d is not supported (this reader knows version %d)", e.V, Version), Err: ErrUnsupportedVersion}
		}
		r.sawMeta = true
	}
	if !known {
		r.Skipped++
		return true, nil
	}
	return false, nil
}

// readLine returns the next line without its newline. complete is false for
// a final line that had no newline.
func (r *Reader) readLine() (line []byte, complete bool, err error) {
	r.long = r.long[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		switch {
		case err == nil:
			r.line++
			if len(r.long) > 0 {
				r.long = append(r.long, chunk[:len(chunk)-1]...)
				return r.long, true, nil
			}
			return chunk[:len(chunk)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(r.long)+len(chunk) > MaxLineBytes {
				return nil, false, &LineError{Line: r.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
			}
			r.long = append(r.long, chunk...)
		case errors.Is(err, io.EOF):
			if len(chunk) == 0 && len(r.long) == 0 {
				return nil, false, io.EOF
			}
			r.line++
			r.long = append(r.long, chunk...)
			return r.long, false, nil
		default:
			return nil, false, fmt.Errorf("read history: %w", err)
		}
	}
}

// decodeEvent fills e from v. known is false for a type this reader does not know.
func decodeEvent(v *fastjson.Value, e *Event) (known bool, err error) {
	if v.Type() != fastjson.TypeObject {
		return false, fmt.Errorf("an event must be a JSON object, got %s", v.Type())
	}
	t, err := str(v, "type", true)
	if err != nil {
		return false, err
	}
	e.Type = Type(t)
	switch e.Type {
	case TypeMeta:
		var n int64
		if n, err = integer(v, "v", true); err != nil {
			return true, err
		}
		e.V = int(n)
		if e.Scenario, err = str(v, "scenario", false); err != nil {
			return true, err
		}
		if e.Seed, err = integer(v, "seed", false); err != nil {
			return true, err
		}
		if e.Started, err = str(v, "started", false); err != nil {
			return true, err
		}
		if f := v.Get("effects_recorded"); f != nil && f.Type() != fastjson.TypeNull {
			if e.EffectsRecorded, err = f.Bool(); err != nil {
				return true, fmt.Errorf(`"effects_recorded" must be true or false`)
			}
			e.EffectsUnread = !e.EffectsRecorded
		}
		if f := v.Get("contract"); f != nil && f.Type() != fastjson.TypeNull {
			if e.Contract, err = decodeContract(f); err != nil {
				return true, fmt.Errorf("contract: %w", err)
			}
		}
		if e.Invariants, err = stringList(v, "invariants", "invariant names"); err != nil {
			return true, err
		}
		if e.Mode, err = str(v, "mode", false); err != nil {
			return true, err
		}
		if f := v.Get("client_contract"); f != nil && f.Type() != fastjson.TypeNull {
			if e.ClientContract, err = decodeClientContract(f); err != nil {
				return true, fmt.Errorf("client_contract: %w", err)
			}
		}
		return true, nil
	case TypeInvocation, TypeBelief:
		return true, decodeClient(v, e)
	case TypeStep, TypeBudget, TypeEnvironment, TypeOracle, TypeSettled:
		return true, decodeRun(v, e)
	case TypeInvoke:
		return true, decodeInvoke(v, e)
	case TypeOK, TypeInfo, TypeFail:
		if e.Op, err = integer(v, "op", true); err != nil {
			return true, err
		}
		if e.NS, err = integer(v, "ns", true); err != nil {
			return true, err
		}
		if e.Error, err = str(v, "error", false); err != nil {
			return true, err
		}
		if e.By, err = str(v, "by", false); err != nil {
			return true, err
		}
		if f := v.Get("forwarded"); f != nil && f.Type() != fastjson.TypeNull {
			if e.Forwarded, err = f.Bool(); err != nil {
				return true, fmt.Errorf(`"forwarded" must be true or false`)
			}
		}
		if e.RetryAfterMS, err = integer(v, "retry_after_ms", false); err == nil && e.RetryAfterMS < 0 {
			err = fmt.Errorf(`"retry_after_ms" must not be negative`)
		}
		if err != nil {
			return true, err
		}
		if e.Type != TypeOK {
			return true, nil
		}
		rv := v.Get("resp")
		if rv == nil {
			return true, fmt.Errorf(`an ok event needs "resp" with the response's "status"`)
		}
		e.Resp = &Response{}
		return true, decodeResponse(rv, e.Resp)
	case TypeFault:
		if e.Fault, err = str(v, "fault", true); err != nil {
			return true, err
		}
		if e.Action, err = str(v, "action", false); err != nil {
			return true, err
		}
		if e.Op, err = integer(v, "op", false); err != nil {
			return true, err
		}
		if e.NS, err = integer(v, "ns", true); err != nil {
			return true, err
		}
		if d := v.Get("detail"); d != nil {
			e.Detail = d.MarshalTo(nil)
		}
		return true, nil
	case TypeInterrupted:
		if e.NS, err = integer(v, "ns", false); err != nil {
			return true, err
		}
		if e.Error, err = str(v, "error", false); err != nil {
			return true, err
		}
		return true, nil
	case TypeEffect:
		if e.Effect, err = str(v, "effect", true); err != nil {
			return true, err
		}
		for _, f := range []struct {
			name string
			dst  *string
		}{{"tenant", &e.Tenant}, {"key", &e.Key}, {"intent", &e.Intent}, {"kind", &e.Kind}} {
			if *f.dst, err = str(v, f.name, false); err != nil {
				return true, err
			}
		}
		if e.NS, err = integer(v, "ns", false); err != nil {
			return true, err
		}
		return true, nil
	case TypeAck:
		for _, f := range []struct {
			name string
			dst  *string
		}{{"tenant", &e.Tenant}, {"key", &e.Key}, {"intent", &e.Intent}, {"kind", &e.Kind}} {
			if *f.dst, err = str(v, f.name, false); err != nil {
				return true, err
			}
		}
		var n int64
		if n, err = integer(v, "attempt", false); err == nil && n < 0 {
			err = fmt.Errorf(`"attempt" must not be negative`)
		}
		e.Attempt = int(n)
		if err != nil {
			return true, err
		}
		if e.NS, err = integer(v, "ns", false); err != nil {
			return true, err
		}
		return true, nil
	}
	return false, nil
}

// decodeRun fills the events a run writes about itself: its steps, its
// budget, its environment and its oracle's reads.
func decodeRun(v *fastjson.Value, e *Event) (err error) {
	if e.NS, err = integer(v, "ns", false); err != nil {
		return err
	}
	switch e.Type {
	case TypeStep:
		if e.Name, err = str(v, "name", false); err != nil {
			return err
		}
		e.Expect, err = str(v, "expect", false)
	case TypeBudget:
		if e.MaxRequests, err = integer(v, "max_requests", false); err == nil && e.MaxRequests < 0 {
			err = fmt.Errorf(`"max_requests" must not be negative`)
		}
	case TypeEnvironment:
		if e.Error, err = str(v, "error", true); err == nil && e.Error == "" {
			err = fmt.Errorf(`"error" must name the cause`)
		}
	case TypeOracle:
		if e.Source, err = str(v, "source", false); err != nil {
			return err
		}
		if e.Got, err = str(v, "got", false); err != nil {
			return err
		}
		var n int64
		if n, err = integer(v, "effects", false); err == nil && n < 0 {
			err = fmt.Errorf(`"effects" must not be negative`)
		}
		e.Read = int(n)
	}
	return err
}

// decodeClient fills the events a client run writes about each intent's
// command: its start (invocation) and the belief its exit stated.
func decodeClient(v *fastjson.Value, e *Event) (err error) {
	if e.Intent, err = str(v, "intent", true); err != nil {
		return err
	}
	if e.Intent == "" {
		return fmt.Errorf(`"intent" must name the intent`)
	}
	if e.NS, err = integer(v, "ns", false); err != nil {
		return err
	}
	if e.Error, err = str(v, "error", false); err != nil {
		return err
	}
	if e.Type == TypeInvocation {
		if e.Tenant, err = str(v, "tenant", false); err != nil {
			return err
		}
		if e.Action, err = str(v, "action", false); err != nil {
			return err
		}
		e.Body, err = body(v)
		return err
	}
	if e.Belief, err = str(v, "belief", true); err != nil {
		return err
	}
	switch e.Belief {
	case BeliefSuccess, BeliefUnknown, BeliefFailure:
	default:
		return fmt.Errorf(`"belief" must be success, unknown or failure, got %q`, e.Belief)
	}
	var n int64
	if n, err = integer(v, "exit", false); err != nil {
		return err
	}
	e.Exit = int(n)
	e.Resource, err = str(v, "resource", false)
	return err
}

func decodeInvoke(v *fastjson.Value, e *Event) (err error) {
	if e.Op, err = integer(v, "op", true); err != nil {
		return err
	}
	if e.NS, err = integer(v, "ns", true); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"intent", &e.Intent}, {"tenant", &e.Tenant}, {"key", &e.Key}, {"listener", &e.Listener}} {
		if *f.dst, err = str(v, f.name, false); err != nil {
			return err
		}
	}
	var n int64
	if n, err = integer(v, "attempt", false); err != nil {
		return err
	}
	e.Attempt = int(n)
	if n, err = integer(v, "client", false); err != nil {
		return err
	}
	e.Client = int(n)
	rv := v.Get("req")
	if rv == nil {
		return nil
	}
	if rv.Type() != fastjson.TypeObject {
		return fmt.Errorf(`"req" must be an object, got %s`, rv.Type())
	}
	e.Req = &Request{}
	if e.Req.Method, err = str(rv, "method", false); err != nil {
		return fmt.Errorf("req: %w", err)
	}
	if e.Req.Path, err = str(rv, "path", false); err != nil {
		return fmt.Errorf("req: %w", err)
	}
	if e.Req.Headers, err = headers(rv); err != nil {
		return fmt.Errorf("req: %w", err)
	}
	if e.Req.Body, err = body(rv); err != nil {
		return fmt.Errorf("req: %w", err)
	}
	return nil
}

func decodeResponse(rv *fastjson.Value, r *Response) error {
	if rv.Type() != fastjson.TypeObject {
		return fmt.Errorf(`"resp" must be an object, got %s`, rv.Type())
	}
	n, err := integer(rv, "status", true)
	if err != nil {
		return fmt.Errorf("resp: %w", err)
	}
	if n < 100 || n > 999 {
		return fmt.Errorf(`resp: "status" must be an HTTP status code (100-999), got %d`, n)
	}
	r.Status = int(n)
	if r.Headers, err = headers(rv); err != nil {
		return fmt.Errorf("resp: %w", err)
	}
	if r.Body, err = body(rv); err != nil {
		return fmt.Errorf("resp: %w", err)
	}
	return nil
}

func str(v *fastjson.Value, name string, required bool) (string, error) {
	f := v.Get(name)
	if f == nil || f.Type() == fastjson.TypeNull {
		if required {
			return "", fmt.Errorf("missing %q", name)
		}
		return "", nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return "", fmt.Errorf("%q must be a string, got %s", name, f.Type())
	}
	return string(b), nil
}

func integer(v *fastjson.Value, name string, required bool) (int64, error) {
	f := v.Get(name)
	if f == nil || f.Type() == fastjson.TypeNull {
		if required {
			return 0, fmt.Errorf("missing %q", name)
		}
		return 0, nil
	}
	n, err := f.Int64()
	if err != nil {
		return 0, fmt.Errorf("%q must be an integer, got %s", name, describe(f))
	}
	return n, nil
}

func describe(f *fastjson.Value) string {
	if f.Type() == fastjson.TypeNumber {
		return "number " + string(f.MarshalTo(nil))
	}
	return f.Type().String()
}

func headers(v *fastjson.Value) (Headers, error) {
	f := v.Get("headers")
	if f == nil || f.Type() == fastjson.TypeNull {
		return nil, nil
	}
	o, err := f.Object()
	if err != nil {
		return nil, fmt.Errorf(`"headers" must be an object of name to value, got %s`, f.Type())
	}
	h := make(Headers, 0, o.Len())
	o.Visit(func(k []byte, hv *fastjson.Value) {
		if err != nil {
			return
		}
		b, serr := hv.StringBytes()
		if serr != nil {
			err = fmt.Errorf("header %q must be a string, got %s", k, hv.Type())
			return
		}
		h = append(h, Header{Name: string(k), Value: string(b)})
	})
	return h, err
}

func body(v *fastjson.Value) ([]byte, error) {
	if f := v.Get("body"); f != nil && f.Type() != fastjson.TypeNull {
		b, err := f.StringBytes()
		if err != nil {
			return nil, fmt.Errorf(`"body" must be a string, got %s (bytes that are not UTF-8 go in "body_b64")`, f.Type())
		}
		return append([]byte{}, b...), nil
	}
	f := v.Get("body_b64")
	if f == nil || f.Type() == fastjson.TypeNull {
		return nil, nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return nil, fmt.Errorf(`"body_b64" must be a base64 string, got %s`, f.Type())
	}
	out, err := base64.StdEncoding.AppendDecode(nil, b)
	if err != nil {
		return nil, fmt.Errorf(`"body_b64" is not valid base64: %w`, err)
	}
	return out, nil
}

func decodeContract(v *fastjson.Value) (*Contract, error) {
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("must be an object, got %s", v.Type())
	}
	c := &Contract{}
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"profile", &c.Profile}, {"fingerprint", &c.Fingerprint}, {"repeat", &c.Repeat}} {
		if *f.dst, err = str(v, f.name, false); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"missing_key", &c.MissingKey}, {"reuse", &c.Reuse}, {"in_flight", &c.InFlight}, {"repeat_status", &c.RepeatStatus}} {
		n, err := integer(v, f.name, false)
		if err != nil {
			return nil, err
		}
		if n != 0 && (n < 100 || n > 999) {
			return nil, fmt.Errorf("%q must be an HTTP status code (100-999) or 0, got %d", f.name, n)
		}
		*f.dst = int(n)
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"decision_bound_ms", &c.DecisionBoundMS}, {"retention_gap_ms", &c.RetentionGapMS}, {"max_key_length", &c.MaxKeyLength}} {
		if *f.dst, err = integer(v, f.name, false); err != nil {
			return nil, err
		}
		if *f.dst < 0 {
			return nil, fmt.Errorf("%q must not be negative", f.name)
		}
	}
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"replay_headers", &c.ReplayHeaders}, {"replay_ignore", &c.ReplayIgnore}} {
		if *f.dst, err = stringList(v, f.name, "header names"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func decodeClientContract(v *fastjson.Value) (*ClientContract, error) {
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("must be an object, got %s", v.Type())
	}
	c := &ClientContract{}
	var err error
	for _, f := range []struct {
		name string
		dst  *int
	}{{"budget", &c.Budget}, {"global_budget", &c.GlobalBudget}} {
		n, err := integer(v, f.name, false)
		if err != nil {
			return nil, err
		}
		if n < 0 || n > 1<<31-1 {
			return nil, fmt.Errorf("%q must be a count (0 or more), got %d", f.name, n)
		}
		*f.dst = int(n)
	}
	if c.MinBackoffMS, err = integer(v, "min_backoff_ms", false); err != nil {
		return nil, err
	}
	if c.MinBackoffMS < 0 {
		return nil, fmt.Errorf(`"min_backoff_ms" must not be negative`)
	}
	for _, f := range []struct {
		name string
		dst  *[]int
	}{{"retry_statuses", &c.RetryStatuses}, {"permanent_statuses", &c.PermanentStatuses}} {
		if *f.dst, err = statusList(v, f.name); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		dst  *string
		one  []string
	}{{"jitter", &c.Jitter, []string{"required", "optional"}}, {"unknown", &c.Unknown, []string{"allowed", "forbidden"}}} {
		if *f.dst, err = str(v, f.name, false); err != nil {
			return nil, err
		}
		if *f.dst != "" && *f.dst != f.one[0] && *f.dst != f.one[1] {
			return nil, fmt.Errorf("%q must be %s or %s, got %q", f.name, f.one[0], f.one[1], *f.dst)
		}
	}
	return c, nil
}

// statusList reads an optional array of HTTP status codes; nil when absent.
func statusList(v *fastjson.Value, name string) ([]int, error) {
	a := v.Get(name)
	if a == nil || a.Type() == fastjson.TypeNull {
		return nil, nil
	}
	items, err := a.Array()
	if err != nil {
		return nil, fmt.Errorf("%q must be an array of HTTP status codes, got %s", name, a.Type())
	}
	out := make([]int, 0, len(items))
	for _, it := range items {
		n, err := it.Int()
		if err != nil || n < 100 || n > 999 {
			return nil, fmt.Errorf("%q must be an array of HTTP status codes (100-999), got %s in it", name, describe(it))
		}
		out = append(out, n)
	}
	return out, nil
}

// stringList reads an optional array of strings (what says what they name,
// for the error); nil when it is absent.
func stringList(v *fastjson.Value, name, what string) ([]string, error) {
	a := v.Get(name)
	if a == nil || a.Type() == fastjson.TypeNull {
		return nil, nil
	}
	items, err := a.Array()
	if err != nil {
		return nil, fmt.Errorf("%q must be an array of %s, got %s", name, what, a.Type())
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		b, err := it.StringBytes()
		if err != nil {
			return nil, fmt.Errorf("%q must be an array of %s, got a %s in it", name, what, it.Type())
		}
		out = append(out, string(b))
	}
	return out, nil
}
