package history

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Writer encodes events as JSONL, one event per line, in a fixed field order
// so that histories diff well. It is safe for concurrent use: the driver's
// clients write from many goroutines.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// encBufs are the buffers events are encoded into before the lock is
// taken: many goroutines encode at once, and the lock only guards a copy.
var encBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledEnc bounds the buffers kept for reuse: one event with a large
// body should not pin its buffer.
const maxPooledEnc = 64 << 10

// NewWriter returns a [Writer] that buffers its output; call [Writer.Flush]
// to push what is buffered to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10)}
}

// Write appends one event. After the first error every call returns it.
func (w *Writer) Write(e *Event) error {
	bp := encBufs.Get().(*[]byte)
	b := append(AppendEvent((*bp)[:0], e), '\n')
	w.mu.Lock()
	if w.err == nil && len(b) > MaxLineBytes {
		// A line the reader refuses would make the whole file unreadable:
		// the writer stops here instead, and says so (the harness's own
		// bounds on bodies and headers keep its lines far below). What was
		// written before goes out.
		_ = w.w.Flush()
		w.err = fmt.Errorf("write history: a %s event of %d bytes is longer than a history line may be (%d)", e.Type, len(b), MaxLineBytes)
	}
	if w.err == nil {
		if _, err := w.w.Write(b); err != nil {
			w.err = fmt.Errorf("write history: %w", err)
		}
	}
	err := w.err
	w.mu.Unlock()
	if cap(b) <= maxPooledEnc {
		*bp = b
		encBufs.Put(bp)
	}
	return err
}

// Flush writes buffered events to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("flush history: %w", err)
	}
	return w.err
}

// AppendEvent appends the JSON encoding of e (without a newline) to dst.
// Fields that do not belong to e's type, and zero optional fields, are left out.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, string(e.Type))
	switch e.Type {
	case TypeMeta:
		dst = appendInt(dst, "v", int64(e.V))
		dst = appendOptString(dst, "scenario", e.Scenario)
		dst = appendInt(dst, "seed", e.Seed)
		dst = appendOptString(dst, "started", e.Started)
		switch {
		case e.EffectsRecorded:
			dst = append(dst, `,"effects_recorded":true`...)
		case e.EffectsUnread:
			dst = append(dst, `,"effects_recorded":false`...)
		}
		if c := e.Contract; c != nil {
			dst = appendContract(dst, c)
		}
		if e.Invariants != nil {
			dst = appendStrings(dst, "invariants", e.Invariants)
		}
		dst = appendOptString(dst, "mode", e.Mode)
		if c := e.ClientContract; c != nil {
			dst = appendClientContract(dst, c)
		}
	case TypeInvoke:
		dst = appendInt(dst, "op", e.Op)
		dst = appendOptString(dst, "intent", e.Intent)
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendOptString(dst, "key", e.Key)
		dst = appendOptString(dst, "listener", e.Listener)
		if e.Attempt != 0 {
			dst = appendInt(dst, "attempt", int64(e.Attempt))
		}
		dst = appendInt(dst, "client", int64(e.Client))
		dst = appendInt(dst, "ns", e.NS)
		dst = appendState(dst, e)
		if e.Req != nil {
			dst = append(dst, `,"req":{"method":`...)
			dst = appendString(dst, e.Req.Method)
			dst = append(dst, `,"path":`...)
			dst = appendString(dst, e.Req.Path)
			dst = appendHeadersAndBody(dst, e.Req.Headers, e.Req.Body)
			dst = append(dst, '}')
		}
	case TypeOK, TypeInfo, TypeFail:
		dst = appendInt(dst, "op", e.Op)
		dst = appendInt(dst, "ns", e.NS)
		if e.Resp != nil {
			dst = append(dst, `,"resp":{"status":`...)
			dst = strconv.AppendInt(dst, int64(e.Resp.Status), 10)
			dst = appendHeadersAndBody(dst, e.Resp.Headers, e.Resp.Body)
			dst = append(dst, '}')
		}
		dst = appendOptString(dst, "error", e.Error)
		dst = appendOptString(dst, "by", e.By)
		// Forwarded is written whenever the proxy answered: false is the
		// fact that the upstream never saw the request.
		if e.By != "" || e.Forwarded {
			dst = append(dst, `,"forwarded":`...)
			dst = strconv.AppendBool(dst, e.Forwarded)
		}
		if e.RetryAfterMS != 0 {
			dst = appendInt(dst, "retry_after_ms", e.RetryAfterMS)
		}
	case TypeInvocation:
		dst = appendOptString(dst, "intent", e.Intent)
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendInt(dst, "ns", e.NS)
		dst = appendOptString(dst, "action", e.Action)
		dst = appendHeadersAndBody(dst, nil, e.Body)
		dst = appendOptString(dst, "error", e.Error)
	case TypeBelief:
		dst = appendOptString(dst, "intent", e.Intent)
		dst = appendInt(dst, "ns", e.NS)
		dst = appendOptString(dst, "belief", e.Belief)
		dst = appendInt(dst, "exit", int64(e.Exit))
		dst = appendOptString(dst, "resource", e.Resource)
		dst = appendOptString(dst, "error", e.Error)
	case TypeFault:
		dst = append(dst, `,"fault":`...)
		dst = appendString(dst, e.Fault)
		if e.Action != "" && e.Action != "fire" {
			dst = appendOptString(dst, "action", e.Action)
		}
		if e.Op != 0 {
			dst = appendInt(dst, "op", e.Op)
		}
		dst = appendInt(dst, "ns", e.NS)
		if len(e.Detail) > 0 {
			dst = append(dst, `,"detail":`...)
			dst = append(dst, e.Detail...)
		}
	case TypeInterrupted:
		dst = appendInt(dst, "ns", e.NS)
		dst = appendOptString(dst, "error", e.Error)
	case TypeStep:
		dst = appendOptString(dst, "name", e.Name)
		dst = appendOptString(dst, "expect", e.Expect)
		dst = appendInt(dst, "ns", e.NS)
	case TypeBudget:
		dst = appendInt(dst, "max_requests", e.MaxRequests)
		dst = appendInt(dst, "ns", e.NS)
	case TypeEnvironment:
		dst = appendOptString(dst, "error", e.Error)
		dst = appendInt(dst, "ns", e.NS)
	case TypeSettled:
		dst = appendInt(dst, "ns", e.NS)
	case TypeOracle:
		dst = appendOptString(dst, "source", e.Source)
		dst = appendInt(dst, "effects", int64(e.Read))
		dst = appendOptString(dst, "got", e.Got)
		dst = appendInt(dst, "ns", e.NS)
	case TypeAck:
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendOptString(dst, "key", e.Key)
		dst = appendOptString(dst, "intent", e.Intent)
		dst = appendInt(dst, "attempt", int64(e.Attempt))
		dst = appendOptString(dst, "kind", e.Kind)
		dst = appendInt(dst, "ns", e.NS)
		dst = appendState(dst, e)
	case TypeDelivery:
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendOptString(dst, "key", e.Key)
		dst = appendOptString(dst, "intent", e.Intent)
		dst = appendInt(dst, "deliveries", int64(e.Deliveries))
		dst = appendOptString(dst, "kind", e.Kind)
		dst = appendInt(dst, "ns", e.NS)
	case TypeEffect:
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendOptString(dst, "key", e.Key)
		dst = appendOptString(dst, "intent", e.Intent)
		dst = append(dst, `,"effect":`...)
		dst = appendString(dst, e.Effect)
		dst = appendOptString(dst, "kind", e.Kind)
		dst = appendInt(dst, "ns", e.NS)
		dst = appendState(dst, e)
		dst = appendWrittenAt(dst, e)
	case TypeState:
		dst = appendOptString(dst, "tenant", e.Tenant)
		dst = appendInt(dst, "ns", e.NS)
		dst = appendState(dst, e)
		dst = appendWrittenAt(dst, e)
	}
	return append(dst, '}')
}

// appendWrittenAt appends when a state was written, when it was read.
func appendWrittenAt(dst []byte, e *Event) []byte {
	if e.WrittenAt.IsZero() {
		return dst
	}
	dst = append(dst, `,"written_at":"`...)
	dst = e.WrittenAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendState appends the resource and state an effect, invoke or ack
// carries, when it carries one.
func appendState(dst []byte, e *Event) []byte {
	if e.State == "" {
		return dst
	}
	dst = appendOptString(dst, "resource", e.Resource)
	return appendOptString(dst, "state", e.State)
}

func appendHeadersAndBody(dst []byte, h Headers, body []byte) []byte {
	if len(h) > 0 {
		dst = append(dst, `,"headers":{`...)
		for i, f := range h {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, f.Name)
			dst = append(dst, ':')
			dst = appendString(dst, f.Value)
		}
		dst = append(dst, '}')
	}
	if body == nil {
		return dst
	}
	if utf8.Valid(body) {
		dst = append(dst, `,"body":`...)
		// Read in place, not copied into a string: appendString keeps
		// nothing of it.
		return appendString(dst, unsafe.String(unsafe.SliceData(body), len(body)))
	}
	dst = append(dst, `,"body_b64":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, body)
	return append(dst, '"')
}

func appendInt(dst []byte, name string, v int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, v, 10)
}

func appendOptString(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, v)
}

const hexDigits = "0123456789abcdef"

// plainJSON are the bytes a JSON string holds as they are: ASCII but
// controls, quote and backslash. One look-up per byte, the loop's common case.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// which is why bodies that are not valid UTF-8 go to body_b64 instead.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainJSON[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendContract(dst []byte, c *Contract) []byte {
	dst = append(dst, `,"contract":{"profile":`...)
	dst = appendString(dst, c.Profile)
	dst = appendInt(dst, "missing_key", int64(c.MissingKey))
	dst = appendInt(dst, "reuse", int64(c.Reuse))
	dst = appendInt(dst, "in_flight", int64(c.InFlight))
	dst = appendOptString(dst, "fingerprint", c.Fingerprint)
	for _, f := range []struct {
		name string
		list []string
	}{{"replay_headers", c.ReplayHeaders}, {"replay_ignore", c.ReplayIgnore}} {
		if f.list != nil {
			dst = appendStrings(dst, f.name, f.list)
		}
	}
	if c.DecisionBoundMS != 0 {
		dst = appendInt(dst, "decision_bound_ms", c.DecisionBoundMS)
	}
	if c.RetentionGapMS != 0 {
		dst = appendInt(dst, "retention_gap_ms", c.RetentionGapMS)
	}
	if c.Repeat != "" {
		dst = appendOptString(dst, "repeat", c.Repeat)
		dst = appendInt(dst, "repeat_status", int64(c.RepeatStatus))
	}
	if c.MaxKeyLength != 0 {
		dst = appendInt(dst, "max_key_length", c.MaxKeyLength)
	}
	if len(c.States) > 0 {
		dst = appendStrings(dst, "states", c.States)
	}
	if c.MaxDeliveries != 0 {
		dst = appendInt(dst, "max_deliveries", int64(c.MaxDeliveries))
	}
	return append(dst, '}')
}

func appendClientContract(dst []byte, c *ClientContract) []byte {
	dst = append(dst, `,"client_contract":{"budget":`...)
	dst = strconv.AppendInt(dst, int64(c.Budget), 10)
	dst = appendInt(dst, "global_budget", int64(c.GlobalBudget))
	for _, f := range []struct {
		name string
		list []int
	}{{"retry_statuses", c.RetryStatuses}, {"permanent_statuses", c.PermanentStatuses}} {
		if f.list == nil {
			continue
		}
		dst = append(dst, ',')
		dst = appendString(dst, f.name)
		dst = append(dst, ":["...)
		for i, n := range f.list {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(n), 10)
		}
		dst = append(dst, ']')
	}
	dst = appendInt(dst, "min_backoff_ms", c.MinBackoffMS)
	dst = appendOptString(dst, "jitter", c.Jitter)
	dst = appendOptString(dst, "unknown", c.Unknown)
	return append(dst, '}')
}

// appendStrings appends the field name with an array of strings.
func appendStrings(dst []byte, name string, list []string) []byte {
	dst = append(dst, ',')
	dst = appendString(dst, name)
	dst = append(dst, ":["...)
	for i, n := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, n)
	}
	return append(dst, ']')
}
