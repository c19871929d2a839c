package history

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"
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
	d := fields{v: v}
	switch e.Type {
	case TypeMeta:
		d.int(&e.V, "v", true)
		d.str(&e.Scenario, "scenario", false)
		d.int64(&e.Seed, "seed", false)
		d.str(&e.Started, "started", false)
		if d.bool(&e.EffectsRecorded, "effects_recorded") {
			e.EffectsUnread = !e.EffectsRecorded
		}
		if f := d.object("contract"); f != nil {
			if e.Contract, d.err = decodeContract(f); d.err != nil {
				d.err = fmt.Errorf("contract: %w", d.err)
			}
		}
		if d.err == nil {
			e.Invariants, d.err = stringList(v, "invariants", "invariant names")
		}
		d.str(&e.Mode, "mode", false)
		if f := d.object("client_contract"); f != nil {
			if e.ClientContract, d.err = decodeClientContract(f); d.err != nil {
				d.err = fmt.Errorf("client_contract: %w", d.err)
			}
		}
	case TypeInvocation, TypeBelief:
		return true, decodeClient(v, e)
	case TypeStep, TypeBudget, TypeEnvironment, TypeOracle, TypeSettled:
		return true, decodeRun(v, e)
	case TypeInvoke:
		return true, decodeInvoke(v, e)
	case TypeOK, TypeInfo, TypeFail:
		d.int64(&e.Op, "op", true)
		d.int64(&e.NS, "ns", true)
		d.str(&e.Error, "error", false)
		d.str(&e.By, "by", false)
		d.bool(&e.Forwarded, "forwarded")
		d.int64(&e.RetryAfterMS, "retry_after_ms", false)
		d.nonNegative(e.RetryAfterMS, "retry_after_ms")
		if d.err != nil || e.Type != TypeOK {
			return true, d.err
		}
		rv := v.Get("resp")
		if rv == nil {
			return true, fmt.Errorf(`an ok event needs "resp" with the response's "status"`)
		}
		e.Resp = &Response{}
		return true, decodeResponse(rv, e.Resp)
	case TypeFault:
		d.str(&e.Fault, "fault", true)
		d.str(&e.Action, "action", false)
		d.int64(&e.Op, "op", false)
		d.int64(&e.NS, "ns", true)
		if f := v.Get("detail"); d.err == nil && f != nil {
			e.Detail = f.MarshalTo(nil)
		}
	case TypeInterrupted:
		d.int64(&e.NS, "ns", false)
		d.str(&e.Error, "error", false)
	case TypeEffect, TypeAck:
		if e.Type == TypeEffect {
			d.str(&e.Effect, "effect", true)
		}
		d.str(&e.Tenant, "tenant", false)
		d.str(&e.Key, "key", false)
		d.str(&e.Intent, "intent", false)
		d.str(&e.Kind, "kind", false)
		if e.Type == TypeAck {
			d.int(&e.Attempt, "attempt", false)
			d.nonNegative(int64(e.Attempt), "attempt")
		}
		d.int64(&e.NS, "ns", false)
		if d.err == nil {
			d.err = decodeState(v, e)
		}
		if e.Type == TypeEffect && d.err == nil {
			d.err = decodeWrittenAt(v, e)
		}
	case TypeDelivery:
		d.str(&e.Tenant, "tenant", false)
		d.str(&e.Key, "key", false)
		d.str(&e.Intent, "intent", false)
		d.str(&e.Kind, "kind", false)
		d.int(&e.Deliveries, "deliveries", true)
		d.nonNegative(int64(e.Deliveries), "deliveries")
		d.int64(&e.NS, "ns", false)
		if d.err == nil && e.Intent == "" && e.Key == "" {
			d.err = fmt.Errorf(`a delivery event needs the message's "intent" or "key"`)
		}
		if d.err == nil && e.Kind != "" && e.Kind != DeliveryExhausted && e.Kind != DeliveryDeadLettered {
			d.err = fmt.Errorf(`a delivery event's "kind" is %q or %q, not %q`, DeliveryExhausted, DeliveryDeadLettered, e.Kind)
		}
	case TypeState:
		d.str(&e.Tenant, "tenant", false)
		d.int64(&e.NS, "ns", false)
		if d.err == nil {
			d.err = decodeState(v, e)
		}
		if d.err == nil && (e.Resource == "" || e.State == "") {
			d.err = fmt.Errorf(`a state event needs "resource" and "state"`)
		}
		if d.err == nil {
			d.err = decodeWrittenAt(v, e)
		}
	default:
		return false, nil
	}
	return true, d.err
}

// fields reads an event's fields in order and keeps the first error: a
// decoder reads on and returns it once, one line a field.
type fields struct {
	v   *fastjson.Value
	err error
}

func (d *fields) str(dst *string, name string, required bool) {
	if d.err == nil {
		*dst, d.err = str(d.v, name, required)
	}
}

func (d *fields) int64(dst *int64, name string, required bool) {
	if d.err == nil {
		*dst, d.err = integer(d.v, name, required)
	}
}

func (d *fields) int(dst *int, name string, required bool) {
	var n int64
	d.int64(&n, name, required)
	*dst = int(n)
}

// bool reads an optional true or false; it reports whether one was read.
func (d *fields) bool(dst *bool, name string) bool {
	f := d.object(name)
	if f == nil {
		return false
	}
	var err error
	if *dst, err = f.Bool(); err != nil {
		d.err = fmt.Errorf("%q must be true or false", name)
	}
	return d.err == nil
}

// object returns the field called name when no error came before and it
// is present and not null.
func (d *fields) object(name string) *fastjson.Value {
	if d.err != nil {
		return nil
	}
	if f := d.v.Get(name); f != nil && f.Type() != fastjson.TypeNull {
		return f
	}
	return nil
}

func (d *fields) nonNegative(n int64, name string) {
	if d.err == nil && n < 0 {
		d.err = fmt.Errorf("%q must not be negative", name)
	}
}

// decodeWrittenAt reads when a state was written: an RFC 3339 time.
func decodeWrittenAt(v *fastjson.Value, e *Event) error {
	at, err := str(v, "written_at", false)
	if err != nil || at == "" {
		return err
	}
	if e.WrittenAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
		return fmt.Errorf(`"written_at" must be an RFC 3339 time, got %q`, at)
	}
	return nil
}

// decodeState reads the resource and state an effect, invoke or ack may
// carry: a resource without a state says nothing and is refused.
func decodeState(v *fastjson.Value, e *Event) (err error) {
	if e.State, err = str(v, "state", false); err != nil {
		return err
	}
	if e.Resource, err = str(v, "resource", false); err != nil {
		return err
	}
	if e.Resource != "" && e.State == "" {
		return fmt.Errorf(`"resource" needs the "state" it is in`)
	}
	return nil
}

// decodeRun fills the events a run writes about itself: its steps, its
// budget, its environment and its oracle's reads.
func decodeRun(v *fastjson.Value, e *Event) error {
	d := fields{v: v}
	d.int64(&e.NS, "ns", false)
	switch e.Type {
	case TypeStep:
		d.str(&e.Name, "name", false)
		d.str(&e.Expect, "expect", false)
	case TypeBudget:
		d.int64(&e.MaxRequests, "max_requests", false)
		d.nonNegative(e.MaxRequests, "max_requests")
	case TypeEnvironment:
		if d.str(&e.Error, "error", true); d.err == nil && e.Error == "" {
			d.err = fmt.Errorf(`"error" must name the cause`)
		}
	case TypeOracle:
		d.str(&e.Source, "source", false)
		d.str(&e.Got, "got", false)
		d.int(&e.Read, "effects", false)
		d.nonNegative(int64(e.Read), "effects")
	}
	return d.err
}

// decodeClient fills the events a client run writes about each intent's
// command: its start (invocation) and the belief its exit stated.
func decodeClient(v *fastjson.Value, e *Event) (err error) {
	d := fields{v: v}
	if d.str(&e.Intent, "intent", true); d.err == nil && e.Intent == "" {
		return fmt.Errorf(`"intent" must name the intent`)
	}
	d.int64(&e.NS, "ns", false)
	d.str(&e.Error, "error", false)
	if e.Type == TypeInvocation {
		d.str(&e.Tenant, "tenant", false)
		d.str(&e.Action, "action", false)
		if d.err == nil {
			e.Body, d.err = body(v)
		}
		return d.err
	}
	d.str(&e.Belief, "belief", true)
	switch e.Belief {
	case BeliefSuccess, BeliefUnknown, BeliefFailure:
	default:
		if d.err == nil {
			d.err = fmt.Errorf(`"belief" must be success, unknown or failure, got %q`, e.Belief)
		}
	}
	d.int(&e.Exit, "exit", false)
	d.str(&e.Resource, "resource", false)
	return d.err
}

func decodeInvoke(v *fastjson.Value, e *Event) (err error) {
	d := fields{v: v}
	d.int64(&e.Op, "op", true)
	d.int64(&e.NS, "ns", true)
	d.str(&e.Intent, "intent", false)
	d.str(&e.Tenant, "tenant", false)
	d.str(&e.Key, "key", false)
	d.str(&e.Listener, "listener", false)
	d.int(&e.Attempt, "attempt", false)
	d.int(&e.Client, "client", false)
	if d.err == nil {
		d.err = decodeState(v, e)
	}
	rv := v.Get("req")
	if d.err != nil || rv == nil {
		return d.err
	}
	if rv.Type() != fastjson.TypeObject {
		return fmt.Errorf(`"req" must be an object, got %s`, rv.Type())
	}
	e.Req = &Request{}
	r := fields{v: rv}
	r.str(&e.Req.Method, "method", false)
	r.str(&e.Req.Path, "path", false)
	if r.err == nil {
		e.Req.Headers, r.err = headers(rv)
	}
	if r.err == nil {
		e.Req.Body, r.err = body(rv)
	}
	if r.err != nil {
		return fmt.Errorf("req: %w", r.err)
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
	d := fields{v: v}
	d.str(&c.Profile, "profile", false)
	d.str(&c.Fingerprint, "fingerprint", false)
	d.str(&c.Repeat, "repeat", false)
	for _, f := range []struct {
		name string
		dst  *int
	}{{"missing_key", &c.MissingKey}, {"reuse", &c.Reuse}, {"in_flight", &c.InFlight}, {"repeat_status", &c.RepeatStatus}} {
		if d.int(f.dst, f.name, false); d.err == nil && *f.dst != 0 && (*f.dst < 100 || *f.dst > 999) {
			d.err = fmt.Errorf("%q must be an HTTP status code (100-999) or 0, got %d", f.name, *f.dst)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"decision_bound_ms", &c.DecisionBoundMS}, {"retention_gap_ms", &c.RetentionGapMS}, {"max_key_length", &c.MaxKeyLength}} {
		d.int64(f.dst, f.name, false)
		d.nonNegative(*f.dst, f.name)
	}
	if d.err == nil {
		c.ReplayHeaders, d.err = stringList(v, "replay_headers", "header names")
	}
	if d.err == nil {
		c.ReplayIgnore, d.err = stringList(v, "replay_ignore", "header names")
	}
	if d.err == nil {
		c.States, d.err = stringList(v, "states", "state names")
	}
	d.int(&c.MaxDeliveries, "max_deliveries", false)
	d.nonNegative(int64(c.MaxDeliveries), "max_deliveries")
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

func decodeClientContract(v *fastjson.Value) (*ClientContract, error) {
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("must be an object, got %s", v.Type())
	}
	c := &ClientContract{}
	d := fields{v: v}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"budget", &c.Budget}, {"global_budget", &c.GlobalBudget}} {
		var n int64
		if d.int64(&n, f.name, false); d.err == nil && (n < 0 || n > 1<<31-1) {
			d.err = fmt.Errorf("%q must be a count (0 or more), got %d", f.name, n)
		}
		*f.dst = int(n)
	}
	d.int64(&c.MinBackoffMS, "min_backoff_ms", false)
	d.nonNegative(c.MinBackoffMS, "min_backoff_ms")
	if d.err == nil {
		c.RetryStatuses, d.err = statusList(v, "retry_statuses")
	}
	if d.err == nil {
		c.PermanentStatuses, d.err = statusList(v, "permanent_statuses")
	}
	for _, f := range []struct {
		name string
		dst  *string
		one  []string
	}{{"jitter", &c.Jitter, []string{"required", "optional"}}, {"unknown", &c.Unknown, []string{"allowed", "forbidden"}}} {
		if d.str(f.dst, f.name, false); d.err == nil && *f.dst != "" && *f.dst != f.one[0] && *f.dst != f.one[1] {
			d.err = fmt.Errorf("%q must be %s or %s, got %q", f.name, f.one[0], f.one[1], *f.dst)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// statusList reads an optional array of HTTP status codes; nil when absent.
func statusList(v *fastjson.Value, name string) ([]int, error) {
	return list(v, name, "HTTP status codes", "HTTP status codes (100-999)", func(it *fastjson.Value) (int, string) {
		if n, err := it.Int(); err == nil && n >= 100 && n <= 999 {
			return n, ""
		}
		return 0, describe(it)
	})
}

// stringList reads an optional array of strings (what says what they name,
// for the error); nil when it is absent.
func stringList(v *fastjson.Value, name, what string) ([]string, error) {
	return list(v, name, what, what, func(it *fastjson.Value) (string, string) {
		b, err := it.StringBytes()
		if err != nil {
			return "", "a " + it.Type().String()
		}
		return string(b), ""
	})
}

// list reads an optional array of what (each item read by item, which
// says what a bad one is); nil when it is absent.
func list[T any](v *fastjson.Value, name, what, items string, item func(*fastjson.Value) (T, string)) ([]T, error) {
	a := v.Get(name)
	if a == nil || a.Type() == fastjson.TypeNull {
		return nil, nil
	}
	arr, err := a.Array()
	if err != nil {
		return nil, fmt.Errorf("%q must be an array of %s, got %s", name, what, a.Type())
	}
	out := make([]T, 0, len(arr))
	for _, it := range arr {
		x, bad := item(it)
		if bad != "" {
			return nil, fmt.Errorf("%q must be an array of %s, got %s in it", name, items, bad)
		}
		out = append(out, x)
	}
	return out, nil
}
