package history

import (
	"bytes"
	"encoding/base64"
	"fmt"
)

// loader builds a [History] from lines. Invoke, completion and effect lines,
// nearly all of a history, take a direct path ([loader.fast]): a [scanner]
// reads the fields from the line's bytes, with no JSON tree, no intermediate
// [Event], no copy of a body (bodies are only hashed), and strings kept in an
// [arena]. A line that path does not fully accept (a meta or fault event, a
// field of an unexpected type, a bad status, an unusual escape, invalid
// JSON) goes to the JSON parser, [Reader.decode] and [History.add], which
// stay the reference and produce the error messages.
type loader struct {
	h         *History
	keep      []string
	keepB     [][]byte
	keepNames []string // keep, interned
	keepFn    func(name string) bool
	keepSeen  map[string]bool // keepFn's answer per name
	canon     canonicalizer
	in        interner
	mem       arena
	recent    [8]string // the values intern returned last
	next      int
	byOp      opIndex
	attempts  chunks[Attempt]
	effects   chunks[Effect]
	b64       []byte
	sc        scanner
	fields    lineFields
	body      *bodyFields // the object being read by onBodyField
	keepHdrs  bool        // whether onHeader collects what it reads
	hdrs      Headers     // kept response headers of the line being read
	// The scanner's callbacks, made once rather than once per line.
	onField, onBodyField, onHeader func(k []byte, at int) (int, bool)
}

func newLoader(h *History, keep []string) *loader {
	l := &loader{h: h, keep: keep, in: make(interner)}
	for _, k := range keep {
		l.keepB = append(l.keepB, []byte(k))
		l.keepNames = append(l.keepNames, l.in.get(k))
	}
	l.onField, l.onBodyField, l.onHeader = l.field, l.bodyField, l.header
	return l
}

// intern returns the shared string for a low-cardinality value (a tenant,
// a method, a header value), allocating only for a value it has not seen.
func (l *loader) intern(b []byte) string {
	// Most lines repeat a value of the last few (one method, one path, a
	// handful of tenants): a comparison is cheaper than a map lookup.
	for _, s := range l.recent {
		if string(b) == s {
			return s
		}
	}
	var v string
	if len(l.in) > 1<<16 {
		// The interner is full of values that did not repeat (a Location
		// per order, say): looking them up again would only cost time.
		v = l.mem.string(b)
	} else if v = l.in[string(b)]; v == "" && len(b) > 0 {
		v = l.mem.string(b)
		l.in[v] = v
	}
	l.recent[l.next%len(l.recent)] = v
	l.next++
	return v
}

// finish moves the attempts and effects into the History.
func (l *loader) finish() {
	l.h.Attempts = l.attempts.slice()
	l.h.Effects = l.effects.slice()
}

// chunks collects values in fixed-size blocks and copies them once into a
// slice of the exact length at the end. Appending to one slice would copy
// and discard every element several times as it grows (a few hundred MB of
// garbage for a million-event history).
//
// When the size of the input is known, [chunks.reserve] lays the values
// out in one slice of the expected length instead, so that a good guess
// saves the copy (and its garbage) at the end; values past the guess go to
// blocks as before.
type chunks[T any] struct {
	flat []T // reserved: values 0 to cap(flat)-1
	full [][]T
	cur  []T
	n    int
}

const chunkLen = 4096

func (c *chunks[T]) add(v T) {
	if len(c.flat) < cap(c.flat) {
		c.flat = append(c.flat, v)
		c.n++
		return
	}
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]T, 0, chunkLen)
	}
	c.cur = append(c.cur, v)
	c.n++
}

func (c *chunks[T]) at(i int32) *T {
	if int(i) < len(c.flat) {
		return &c.flat[i]
	}
	j := int(i) - len(c.flat)
	if f := j / chunkLen; f < len(c.full) {
		return &c.full[f][j%chunkLen]
	}
	return &c.cur[j%chunkLen]
}

// reserve moves the values into one slice with room for n in all.
func (c *chunks[T]) reserve(n int) {
	if c.flat != nil || n <= c.n {
		return
	}
	flat := make([]T, 0, n)
	for _, f := range c.full {
		flat = append(flat, f...)
	}
	c.flat, c.full, c.cur = append(flat, c.cur...), nil, nil
}

// slice returns all values in one slice (nil for none) and empties c. A
// reserved slice that held them all is returned as it is, unless the guess
// was far too large. A guess made from the start of a run is somewhat too
// large when effects are recorded at its end (about 14% for attempts in a
// generated history): keeping that room costs less than the copy, which
// would double the attempts' memory at the end of the load.
func (c *chunks[T]) slice() []T {
	if c.n == 0 {
		return nil
	}
	if c.n == len(c.flat) && cap(c.flat)-c.n <= c.n/4 {
		out := c.flat[:c.n:c.n]
		*c = chunks[T]{}
		return out
	}
	out := make([]T, 0, c.n)
	out = append(out, c.flat...)
	c.flat = nil
	for i, f := range c.full {
		out = append(out, f...)
		c.full[i] = nil // let the collector have it
	}
	out = append(out, c.cur...)
	*c = chunks[T]{}
	return out
}

// sizer guesses how many attempts and effects an input of known size
// holds, from the lines read so far, so that [chunks.reserve] can lay them
// out at once. Each kind is measured from its first line: effects are
// often all recorded at the end of a run.
type sizer struct {
	left int64 // bytes of input not yet read; 0 when unknown
	read int64
	// from is how much had been read when the first of a kind came;
	// done, whether its guess was made.
	attemptsFrom, effectsFrom int64
	attemptsDone, effectsDone bool
}

// sizerMin is how many values a guess is made from.
const sizerMin = 2048

// line notes one more line of n bytes and reserves room when a kind has
// been seen enough to guess its total.
func (z *sizer) line(n int, l *loader) {
	if z.left <= 0 {
		return
	}
	z.read += int64(n)
	z.left -= int64(n)
	z.guess(l.attempts.n, &z.attemptsFrom, &z.attemptsDone, l.attempts.reserve)
	z.guess(l.effects.n, &z.effectsFrom, &z.effectsDone, l.effects.reserve)
}

func (z *sizer) guess(n int, from *int64, done *bool, reserve func(int)) {
	switch {
	case *done:
	case n == 0:
		*from = z.read
	case n >= sizerMin:
		*done = true
		if span := z.read - *from; span > 0 && z.left > 0 {
			reserve(n + int(float64(n)*float64(z.left)/float64(span)))
		}
	}
}

// count records that one more event was read.
func (l *loader) count(ns int64) {
	l.h.Events++
	if ns > l.h.End {
		l.h.End = ns
	}
}

// invoked appends a new attempt, checking that its op is new.
func (l *loader) invoked(a *Attempt) error {
	if _, dup := l.byOp.get(a.Op); dup {
		return fmt.Errorf("op %d is invoked twice: op ids must be unique in a run", a.Op)
	}
	l.byOp.put(a.Op, int32(l.attempts.n))
	l.attempts.add(*a)
	return nil
}

// completed returns the attempt that a completion event of type t ends.
func (l *loader) completed(t Type, op int64) (*Attempt, error) {
	i, ok := l.byOp.get(op)
	if !ok {
		return nil, fmt.Errorf("%s for op %d, which no earlier invoke event started", t, op)
	}
	a := l.attempts.at(i)
	if a.Done() {
		return nil, fmt.Errorf("op %d completes twice: an attempt ends once", op)
	}
	return a, nil
}

// lineFields are the fields of a line the direct path reads; bodyFields
// those of its "req" or "resp" object, read in the same pass.
type lineFields struct {
	typ, op, ns, intent, tenant, key, attempt, client, req, resp, error, effect, kind tok
	reqB, respB                                                                       bodyFields
}

type bodyFields struct {
	method, path, headers, body, bodyB64, status tok
	// text is the body unescaped as it was scanned (when textRead), or
	// textBad when it has an escape the scanner leaves to the parser.
	text              []byte
	textRead, textBad bool
}

// fast applies a line when it is a well-formed invoke, completion or effect
// line that the scanner fully understands. handled is false, with nothing
// changed, for any other line.
func (l *loader) fast(line []byte) (handled bool, err error) {
	s := &l.sc
	s.line, s.esc = line, s.esc[:0]
	i := s.ws(0)
	if i >= len(line) || line[i] != '{' {
		return false, nil
	}
	f := &l.fields
	*f = lineFields{}
	l.hdrs = l.hdrs[:0]
	end, ok := s.members(i, 1, l.onField)
	if !ok || s.ws(end) != len(line) || f.typ.kind != '"' {
		return false, nil
	}
	switch t := line[f.typ.start:f.typ.end]; string(t) {
	case "invoke":
		return l.invoke(f)
	case "ok", "info", "fail":
		return l.complete(f, t)
	case "effect":
		return l.effect(f)
	}
	return false, nil
}

// field records the first occurrence of a top-level member that the direct
// path reads, reading "req" and "resp" objects member by member.
func (l *loader) field(k []byte, at int) (int, bool) {
	f := &l.fields
	var dst *tok
	var body *bodyFields
	switch string(k) {
	case "type":
		dst = &f.typ
	case "op":
		dst = &f.op
	case "ns":
		dst = &f.ns
	case "intent":
		dst = &f.intent
	case "tenant":
		dst = &f.tenant
	case "key":
		dst = &f.key
	case "attempt":
		dst = &f.attempt
	case "client":
		dst = &f.client
	case "req":
		dst, body = &f.req, &f.reqB
	case "resp":
		dst, body = &f.resp, &f.respB
	case "error":
		dst = &f.error
	case "effect":
		dst = &f.effect
	case "kind":
		dst = &f.kind
	}
	if dst == nil || dst.kind != 0 || body == nil || at >= len(l.sc.line) || l.sc.line[at] != '{' {
		t, end, ok := l.sc.value(at, 1)
		if ok && dst != nil && dst.kind == 0 {
			*dst = t
		}
		return end, ok
	}
	l.body = body
	end, ok := l.sc.members(at, 2, l.onBodyField)
	*dst = tok{kind: '{', start: at, end: end}
	return end, ok
}

// bodyField records the first occurrence of a member of "req" or "resp".
func (l *loader) bodyField(k []byte, at int) (int, bool) {
	b := l.body
	var dst *tok
	switch string(k) {
	case "method":
		dst = &b.method
	case "path":
		dst = &b.path
	case "headers":
		dst = &b.headers
	case "body":
		dst = &b.body
	case "body_b64":
		dst = &b.bodyB64
	case "status":
		dst = &b.status
	}
	if dst == &b.body && dst.kind == 0 && at < len(l.sc.line) && l.sc.line[at] == '"' {
		// A body is nearly always kept (hashed): read and unescaped in
		// one pass.
		t, text, textOK, end, ok := l.sc.strText(at)
		*dst, b.text, b.textRead, b.textBad = t, text, true, !textOK
		return end, ok
	}
	if dst == &b.headers && dst.kind == 0 && at < len(l.sc.line) && l.sc.line[at] == '{' {
		// The headers are checked (an object of strings) and the kept ones
		// collected as they are read: one pass, not a scan then a read.
		if l.keepHdrs = b == &l.fields.respB; l.keepHdrs {
			l.hdrs = l.hdrs[:0]
		}
		end, ok := l.sc.members(at, 3, l.onHeader)
		*dst = tok{kind: '{', start: at, end: end}
		return end, ok
	}
	t, end, ok := l.sc.value(at, 2)
	if ok && dst != nil && dst.kind == 0 {
		*dst = t
	}
	return end, ok
}

func (l *loader) invoke(f *lineFields) (bool, error) {
	s := &l.sc
	op, ok1 := s.reqInt(f.op)
	ns, ok2 := s.reqInt(f.ns)
	intent, ok3 := s.optStr(f.intent)
	tenant, ok4 := s.optStr(f.tenant)
	key, ok5 := s.optStr(f.key)
	attempt, ok6 := s.optInt(f.attempt)
	client, ok7 := s.optInt(f.client)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return false, nil
	}
	hasReq := f.req.kind != 0
	var method, path []byte
	var reqHash, reqCanon uint64
	if hasReq {
		if f.req.kind != '{' {
			return false, nil
		}
		b := &f.reqB
		var ok1, ok2, ok3 bool
		method, ok1 = s.optStr(b.method)
		path, ok2 = s.optStr(b.path)
		if !ok1 || !ok2 || !headersOK(b.headers) {
			return false, nil
		}
		body, ok3 := l.content(b)
		if !ok3 {
			return false, nil
		}
		reqHash = Hash(body)
		reqCanon = l.canon.hash(body, reqHash)
	}
	l.count(ns)
	a := Attempt{
		Op: op, Tenant: l.intern(tenant), Key: l.mem.string(key), Number: int(attempt), Client: int(client),
		Invoke: ns, Complete: -1, Outcome: Info, ReqHash: reqHash, ReqCanon: reqCanon,
	}
	if len(intent) > 0 {
		a.Intent = l.mem.string(intent)
		l.h.IntentsKnown = true
	} else {
		a.Intent = "key:" + a.Tenant + "/" + a.Key
	}
	if hasReq {
		a.Method, a.Path = l.intern(method), l.intern(path)
	}
	return true, l.invoked(&a)
}

func (l *loader) complete(f *lineFields, t []byte) (bool, error) {
	s := &l.sc
	op, ok1 := s.reqInt(f.op)
	ns, ok2 := s.reqInt(f.ns)
	msg, ok3 := s.optStr(f.error)
	if !(ok1 && ok2 && ok3) {
		return false, nil
	}
	typ := TypeInfo
	var status int64
	var body []byte
	if t[0] == 'o' {
		typ = TypeOK
		if f.resp.kind != '{' {
			return false, nil
		}
		b := &f.respB
		var ok bool
		if status, ok = s.reqInt(b.status); !ok || status < 100 || status > 999 {
			return false, nil
		}
		if !headersOK(b.headers) {
			return false, nil
		}
		if body, ok = l.content(b); !ok {
			return false, nil
		}
	} else if t[0] == 'f' {
		typ = TypeFail
	}
	l.count(ns)
	a, err := l.completed(typ, op)
	if err != nil {
		return true, err
	}
	a.Complete = ns
	if len(msg) > 0 {
		a.Error = l.intern(msg)
	}
	switch typ {
	case TypeOK:
		a.Outcome = OK
		a.HasResp = true
		a.Status = int(status)
		a.RespHash = Hash(body)
		a.RespLen = len(body)
		if len(body) <= PreviewBytes {
			a.RespPreview = l.mem.string(body)
		} else {
			a.RespPreview = l.mem.concat(body[:PreviewBytes], "…")
		}
		a.RespHeaders = l.mem.headerList(l.hdrs)
	case TypeFail:
		a.Outcome = Fail
	}
	return true, nil
}

func (l *loader) effect(f *lineFields) (bool, error) {
	s := &l.sc
	id, ok1 := s.optStr(f.effect)
	tenant, ok2 := s.optStr(f.tenant)
	key, ok3 := s.optStr(f.key)
	intent, ok4 := s.optStr(f.intent)
	kind, ok5 := s.optStr(f.kind)
	ns, ok6 := s.optInt(f.ns)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || f.effect.kind != '"' {
		return false, nil
	}
	l.count(ns)
	if len(kind) == 0 {
		kind = id
		if i := bytes.IndexByte(id, ' '); i > 0 {
			kind = id[:i]
		}
	}
	l.h.EffectsKnown = true
	l.effects.add(Effect{
		Tenant: l.intern(tenant), Key: l.mem.string(key), Intent: l.mem.string(intent), Kind: l.intern(kind), ID: l.mem.string(id), NS: ns,
	})
	return true, nil
}

// headersOK checks a "headers" value the way [Reader] does: absent, null,
// or an object of strings, which [loader.bodyField] checked as it read it
// (collecting the kept response headers into l.hdrs).
func headersOK(t tok) bool {
	return t.kind == 0 || t.null || t.kind == '{'
}

// header checks that a header value is a string and collects it if kept.
func (l *loader) header(k []byte, at int) (int, bool) {
	if at >= len(l.sc.line) || l.sc.line[at] != '"' {
		return 0, false
	}
	v, end, ok := l.sc.str(at)
	if !ok || !l.keepHdrs {
		return end, ok
	}
	kept := false
	for i, kb := range l.keepB {
		if len(k) == len(kb) && bytes.EqualFold(k, kb) {
			b, ok := l.sc.text(v)
			if !ok {
				return 0, false
			}
			l.hdrs = append(l.hdrs, Header{Name: l.keepNames[i], Value: l.intern(b)})
			kept = true
		}
	}
	if !kept && l.keepFn != nil {
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, false // an escaped name: the reference path decodes it
		}
		if !l.keepName(k) {
			return end, true
		}
		b, ok := l.sc.text(v)
		if !ok {
			return 0, false
		}
		l.hdrs = append(l.hdrs, Header{Name: l.intern(k), Value: l.intern(b)})
	}
	return end, true
}

// keepName asks keepFn about a header name, once per name: a history
// repeats a few names on every response.
func (l *loader) keepName(k []byte) bool {
	if keep, ok := l.keepSeen[string(k)]; ok {
		return keep
	}
	keep := l.keepFn(string(k))
	if len(l.keepSeen) < 1024 {
		if l.keepSeen == nil {
			l.keepSeen = make(map[string]bool)
		}
		l.keepSeen[string(k)] = keep
	}
	return keep
}

// content returns the body of a request or response, decoding body_b64 into
// a scratch buffer: the result is valid until the next call.
func (l *loader) content(b *bodyFields) ([]byte, bool) {
	if b.body.kind != 0 && !b.body.null {
		if b.body.kind != '"' {
			return nil, false
		}
		if b.textRead {
			return b.text, !b.textBad
		}
		return l.sc.text(b.body)
	}
	if b.bodyB64.kind == 0 || b.bodyB64.null {
		return nil, true
	}
	if b.bodyB64.kind != '"' {
		return nil, false
	}
	text, ok := l.sc.text(b.bodyB64)
	if !ok {
		return nil, false
	}
	var err error
	l.b64, err = base64.StdEncoding.AppendDecode(l.b64[:0], text)
	return l.b64, err == nil
}

// opIndex maps op ids to attempt indices. Producers number ops densely from
// 1, so a slice serves nearly every lookup; ids far outside the range seen
// so far (random ids, say) go to a map.
type opIndex struct {
	dense  []int32 // attempt index + 1; 0 for none
	sparse map[int64]int32
	n      int64
}

func (x *opIndex) get(op int64) (int32, bool) {
	if op >= 0 && op < int64(len(x.dense)) {
		if i := x.dense[op]; i > 0 {
			return i - 1, true
		}
	}
	i, ok := x.sparse[op]
	return i, ok
}

func (x *opIndex) put(op int64, i int32) {
	x.n++
	if op >= 0 && op >= int64(len(x.dense)) && op < 4*x.n+4096 {
		x.dense = append(x.dense, make([]int32, max(op+1, 2*int64(len(x.dense)))-int64(len(x.dense)))...)
	}
	if op >= 0 && op < int64(len(x.dense)) {
		x.dense[op] = i + 1
		return
	}
	if x.sparse == nil {
		x.sparse = make(map[int64]int32)
	}
	x.sparse[op] = i
}
