package history

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"
)

// loader builds a [History] from lines. Invoke, completion and effect lines,
// nearly all of a history, take a direct path: a [lineScan] reads the
// fields from the line's bytes into a [scanned] record, with no JSON tree,
// no intermediate [Event], no copy of a body (bodies are only hashed), and
// [loader.apply] keeps what the history needs, strings in an [arena]. A line
// that path does not fully accept (a meta or fault event, a field of an
// unexpected type, a bad status, an unusual escape, invalid JSON) goes to
// the JSON parser, [Reader.decode] and [History.add], which stay the
// reference and produce the error messages.
//
// Scanning a line depends on nothing but the line, so [Load] scans blocks of
// lines on other goroutines ([loadParallel]) while the loader applies the
// records in order: interning, the op index and every error stay in one
// goroutine, in line order, as in the serial loop.
type loader struct {
	h         *History
	keep      []string
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
	hdrs      Headers // kept response headers of the line being applied
	// ls and rec serve the serial loop: one line scanned, then applied.
	ls  *lineScan
	rec scanned
}

func newLoader(h *History, keep []string) *loader {
	l := &loader{h: h, keep: keep, in: make(interner)}
	for _, k := range keep {
		l.keepNames = append(l.keepNames, l.in.get(k))
	}
	return l
}

// scanner returns a new line scanner for l's options.
func (l *loader) scanner() *lineScan {
	ls := &lineScan{keepAny: l.keepFn != nil}
	for _, k := range l.keep {
		ls.keepB = append(ls.keepB, []byte(k))
	}
	ls.onField, ls.onBodyField, ls.onHeader = ls.field, ls.bodyField, ls.header
	return ls
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

// fast applies a line when it is a well-formed invoke, completion or effect
// line that the scanner fully understands. handled is false, with nothing
// changed, for any other line.
func (l *loader) fast(line []byte) (handled bool, err error) {
	if l.ls == nil {
		l.ls = l.scanner()
	}
	ls := l.ls
	ls.sc.esc, ls.hdrs, ls.data = ls.sc.esc[:0], ls.hdrs[:0], line
	if !ls.scan(line, &l.rec) {
		return false, nil
	}
	return l.apply(&l.rec, texts{line, ls.sc.esc}, ls.hdrs)
}

// scanned is one line as [lineScan.scan] read it. It holds no pointers (a
// block holds a thousand of them, written while the collector may be
// running): its strings are spans of the block's bytes or of its scanner's
// buffer, which are not reused before the record is applied.
type scanned struct {
	start, end int32 // the line, in the block's bytes
	line       int32 // the line's number within its block, from 1
	complete   bool  // the line ended with a newline
	kind       byte  // 0: not scanned (the reference path reads it); 'i', 'o', 'n' (info), 'f', 'e', 'v' (invocation) or 'b' (belief)
	hasReq     bool
	// proxied and forwarded are a completion's "by":"proxy" and
	// "forwarded"; retryAfter its "retry_after_ms".
	proxied, forwarded bool

	op, ns, attempt, client, status, retryAfter int64
	reqHash, reqCanon, respHash                 uint64
	respLen                                     int
	hdr0, hdr1                                  int32 // the line's headers in the block's list

	// A belief's kind is in effKind, its resource in id, its exit status
	// in attempt.
	intent, tenant, key, method, path, msg, preview, id, effKind, listener span
}

// span is a string of a scanned line: n bytes from off in the block's
// bytes or, when off is negative, from -off-1 in its scanner's buffer.
type span struct{ off, n int32 }

// texts resolves the spans of the records of one block.
type texts struct{ data, esc []byte }

func (t texts) get(s span) []byte {
	if s.off < 0 {
		return t.esc[-s.off-1 : -s.off-1+s.n]
	}
	return t.data[s.off : s.off+s.n]
}

// scannedHeader is one response header a line carries that may be kept:
// keep indexes the names of [LoadOptions.KeepHeaders], or is -1 for a name
// [LoadOptions.KeepHeader] is asked about when the line is applied; bad
// says that its value has an escape the scanner leaves to the parser, which
// sends the line there if the header is kept.
type scannedHeader struct {
	name, value span
	keep        int32
	bad         bool
}

// apply keeps what a scanned line says. t and hdrs are its block's texts
// and header list.
// handled is false, with nothing changed, when the line must go to the
// reference path after all.
func (l *loader) apply(r *scanned, t texts, hdrs []scannedHeader) (handled bool, err error) {
	switch r.kind {
	case 'i':
		l.count(r.ns)
		a := Attempt{
			Op: r.op, Tenant: l.intern(t.get(r.tenant)), Key: l.mem.string(t.get(r.key)), Number: int(r.attempt), Client: int(r.client),
			Invoke: r.ns, Complete: -1, Outcome: Info, ReqHash: r.reqHash, ReqCanon: r.reqCanon,
		}
		if r.intent.n > 0 {
			a.Intent = l.mem.string(t.get(r.intent))
			l.h.IntentsKnown = true
		} else {
			a.Intent = "key:" + a.Tenant + "/" + a.Key
		}
		if r.hasReq {
			a.Method, a.Path = l.intern(t.get(r.method)), l.intern(t.get(r.path))
		}
		if r.listener.n > 0 {
			a.Listener = l.intern(t.get(r.listener))
		}
		return true, l.invoked(&a)
	case 'v':
		l.count(r.ns)
		l.h.Invocations = append(l.h.Invocations, Invocation{Intent: l.mem.string(t.get(r.intent)), Tenant: l.intern(t.get(r.tenant)), NS: r.ns,
			BodyHash: r.reqHash, BodyCanon: r.reqCanon})
		return true, nil
	case 'b':
		l.count(r.ns)
		l.h.Beliefs = append(l.h.Beliefs, Belief{Intent: l.mem.string(t.get(r.intent)), Belief: l.intern(t.get(r.effKind)), Exit: int(r.attempt),
			Resource: l.mem.string(t.get(r.id)), Error: l.mem.string(t.get(r.msg)), NS: r.ns})
		return true, nil
	case 'e':
		l.count(r.ns)
		l.h.EffectsKnown = true
		l.effects.add(Effect{
			Tenant: l.intern(t.get(r.tenant)), Key: l.mem.string(t.get(r.key)), Intent: l.mem.string(t.get(r.intent)), Kind: l.intern(t.get(r.effKind)), ID: l.mem.string(t.get(r.id)), NS: r.ns,
		})
		return true, nil
	}
	typ := TypeInfo
	switch r.kind {
	case 'o':
		typ = TypeOK
		// The headers KeepHeader keeps are known only now: one with a
		// value the scanner could not read sends the line to the parser.
		l.hdrs = l.hdrs[:0]
		for _, sh := range hdrs[r.hdr0:r.hdr1] {
			switch {
			case sh.keep >= 0:
				l.hdrs = append(l.hdrs, Header{Name: l.keepNames[sh.keep], Value: l.intern(t.get(sh.value))})
			case !l.keepName(t.get(sh.name)):
			case sh.bad:
				return false, nil
			default:
				l.hdrs = append(l.hdrs, Header{Name: l.intern(t.get(sh.name)), Value: l.intern(t.get(sh.value))})
			}
		}
	case 'f':
		typ = TypeFail
	}
	l.count(r.ns)
	a, err := l.completed(typ, r.op)
	if err != nil {
		return true, err
	}
	a.Complete = r.ns
	if r.msg.n > 0 {
		a.Error = l.intern(t.get(r.msg))
	}
	a.Proxied, a.Forwarded, a.RetryAfterMS = r.proxied, r.forwarded, r.retryAfter
	switch typ {
	case TypeOK:
		a.Outcome = OK
		a.HasResp = true
		a.Status = int(r.status)
		a.RespHash = r.respHash
		a.RespLen = r.respLen
		if r.respLen <= PreviewBytes {
			a.RespPreview = l.mem.string(t.get(r.preview))
		} else {
			a.RespPreview = l.mem.concat(t.get(r.preview), "…")
		}
		a.RespHeaders = l.mem.headerList(l.hdrs)
	case TypeFail:
		a.Outcome = Fail
	}
	return true, nil
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

// lineScan reads lines into [scanned] records. It holds no state of the
// history, so several can scan the blocks of one input at once. Unescaped
// strings and decoded bodies accumulate in sc.esc, and response headers in
// hdrs, until the caller empties them (per block, or per line).
type lineScan struct {
	sc       scanner
	data     []byte // the block's bytes: spans are offsets into it
	fields   lineFields
	body     *bodyFields // the object being read by onBodyField
	keepB    [][]byte
	keepAny  bool // KeepHeader is set: every other header is a candidate
	keepHdrs bool // whether onHeader collects what it reads
	hdrs     []scannedHeader
	hdr0     int   // where the line's headers start in hdrs
	escBase  *byte // where sc.esc's array was when the line began
	canon    canonicalizer
	// The scanner's callbacks, made once rather than once per line.
	onField, onBodyField, onHeader func(k []byte, at int) (int, bool)
}

// lineFields are the fields of a line the direct path reads; bodyFields
// those of its "req" or "resp" object, read in the same pass.
type lineFields struct {
	typ, op, ns, intent, tenant, key, attempt, client, req, resp, error, effect, kind tok
	listener, by, forwarded, retryAfter, belief, exit, resource, action               tok
	// stated is the first of "state" and "written_at": an invoke or effect
	// line with one (or with a "resource") goes to the reference path,
	// which reads them.
	stated tok
	// reqB and respB are "req" and "resp"; topB is a client invocation's
	// own "body" and "body_b64".
	reqB, respB, topB bodyFields
}

type bodyFields struct {
	method, path, headers, body, bodyB64, status tok
	// text is the body unescaped as it was scanned (when textRead), or
	// textBad when it has an escape the scanner leaves to the parser.
	text              []byte
	textRead, textBad bool
}

// scan reads a well-formed invoke, completion or effect line that the
// scanner fully understands into r and reports true; for any other line it
// reports false.
func (ls *lineScan) scan(line []byte, r *scanned) bool {
	s := &ls.sc
	s.line = line
	r.kind = 0
	ls.hdr0 = len(ls.hdrs)
	// Spans into the scanner's buffer are taken as pointers are: room is
	// made for what one line can unescape and decode (each string at most
	// once, a base64 body twice, and the rest of the line that strText
	// reserves), so that the buffer does not move during the line; if it
	// did after all, the line goes to the reference path.
	s.esc = slices.Grow(s.esc, 3*len(line)+16)
	ls.escBase = unsafe.SliceData(s.esc[:cap(s.esc)])
	i := s.ws(0)
	if i >= len(line) || line[i] != '{' || !plainText(line) {
		return false
	}
	f := &ls.fields
	*f = lineFields{}
	end, ok := s.members(i, 1, ls.onField)
	if ok && s.ws(end) == len(line) && f.typ.kind == '"' {
		switch t := line[f.typ.start:f.typ.end]; string(t) {
		case "invoke":
			ok = ls.invoke(f, r)
		case "ok", "info", "fail":
			ok = ls.complete(f, t, r)
		case "effect":
			ok = ls.effect(f, r)
		case "invocation", "belief":
			ok = ls.client(f, t[0] == 'b', r)
		default:
			ok = false
		}
	} else {
		ok = false
	}
	if ok && unsafe.SliceData(s.esc[:cap(s.esc)]) != ls.escBase {
		ok = false
	}
	if !ok {
		r.kind = 0
		ls.hdrs = ls.hdrs[:ls.hdr0]
	}
	return ok
}

// span returns where b, a string of the line being scanned, lies: in the
// block's bytes or in the scanner's buffer.
func (ls *lineScan) span(b []byte) span {
	if len(b) == 0 {
		return span{}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if e := uintptr(unsafe.Pointer(ls.escBase)); p >= e && p < e+uintptr(cap(ls.sc.esc)) {
		return span{off: -int32(p-e) - 1, n: int32(len(b))}
	}
	return span{off: int32(p - uintptr(unsafe.Pointer(unsafe.SliceData(ls.data)))), n: int32(len(b))}
}

// field records the first occurrence of a top-level member that the direct
// path reads, reading "req" and "resp" objects member by member.
func (ls *lineScan) field(k []byte, at int) (int, bool) {
	f := &ls.fields
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
	case "listener":
		dst = &f.listener
	case "by":
		dst = &f.by
	case "forwarded":
		dst = &f.forwarded
	case "retry_after_ms":
		dst = &f.retryAfter
	case "state", "written_at":
		dst = &f.stated
	case "resource":
		dst = &f.resource
	case "belief":
		dst = &f.belief
	case "exit":
		dst = &f.exit
	case "action":
		dst = &f.action
	case "body":
		dst = &f.topB.body
	case "body_b64":
		dst = &f.topB.bodyB64
	}
	if dst == nil || dst.kind != 0 || body == nil || at >= len(ls.sc.line) || ls.sc.line[at] != '{' {
		t, end, ok := ls.sc.value(at, 1)
		if ok && dst != nil && dst.kind == 0 {
			*dst = t
		}
		return end, ok
	}
	ls.body = body
	end, ok := ls.sc.members(at, 2, ls.onBodyField)
	*dst = tok{kind: '{', start: at, end: end}
	return end, ok
}

// bodyField records the first occurrence of a member of "req" or "resp".
func (ls *lineScan) bodyField(k []byte, at int) (int, bool) {
	b := ls.body
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
	if dst == &b.body && dst.kind == 0 && at < len(ls.sc.line) && ls.sc.line[at] == '"' {
		// A body is nearly always kept (hashed): read and unescaped in
		// one pass.
		t, text, textOK, end, ok := ls.sc.strText(at)
		*dst, b.text, b.textRead, b.textBad = t, text, true, !textOK
		return end, ok
	}
	if dst == &b.headers && dst.kind == 0 && at < len(ls.sc.line) && ls.sc.line[at] == '{' {
		// The headers are checked (an object of strings) and the kept ones
		// collected as they are read: one pass, not a scan then a read.
		if ls.keepHdrs = b == &ls.fields.respB; ls.keepHdrs {
			ls.hdrs = ls.hdrs[:ls.hdr0]
		}
		end, ok := ls.sc.members(at, 3, ls.onHeader)
		*dst = tok{kind: '{', start: at, end: end}
		return end, ok
	}
	t, end, ok := ls.sc.value(at, 2)
	if ok && dst != nil && dst.kind == 0 {
		*dst = t
	}
	return end, ok
}

func (ls *lineScan) invoke(f *lineFields, r *scanned) bool {
	s := &ls.sc
	op, ok1 := s.reqInt(f.op)
	ns, ok2 := s.reqInt(f.ns)
	intent, ok3 := s.optStr(f.intent)
	tenant, ok4 := s.optStr(f.tenant)
	key, ok5 := s.optStr(f.key)
	attempt, ok6 := s.optInt(f.attempt)
	client, ok7 := s.optInt(f.client)
	listener, ok8 := s.optStr(f.listener)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && ok8) || f.stated.kind != 0 || f.resource.kind != 0 {
		return false
	}
	r.listener = ls.span(listener)
	r.hasReq = f.req.kind != 0
	r.method, r.path = span{}, span{}
	r.reqHash, r.reqCanon = 0, 0
	if r.hasReq {
		if f.req.kind != '{' {
			return false
		}
		b := &f.reqB
		method, ok1 := s.optStr(b.method)
		path, ok2 := s.optStr(b.path)
		r.method, r.path = ls.span(method), ls.span(path)
		if !ok1 || !ok2 || !headersOK(b.headers) {
			return false
		}
		body, ok3 := ls.content(b)
		if !ok3 {
			return false
		}
		r.reqHash = Hash(body)
		r.reqCanon = ls.canon.hash(body, r.reqHash)
	}
	r.kind = 'i'
	r.op, r.ns, r.attempt, r.client = op, ns, attempt, client
	r.intent, r.tenant, r.key = ls.span(intent), ls.span(tenant), ls.span(key)
	return true
}

func (ls *lineScan) complete(f *lineFields, t []byte, r *scanned) bool {
	s := &ls.sc
	op, ok1 := s.reqInt(f.op)
	ns, ok2 := s.reqInt(f.ns)
	msg, ok3 := s.optStr(f.error)
	by, ok4 := s.optStr(f.by)
	forwarded, ok5 := s.optBool(f.forwarded)
	retryAfter, ok6 := s.optInt(f.retryAfter)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || retryAfter < 0 {
		return false
	}
	r.proxied, r.forwarded, r.retryAfter = string(by) == "proxy", forwarded, retryAfter
	r.kind = 'n'
	r.hdr0, r.hdr1 = int32(ls.hdr0), int32(ls.hdr0)
	if t[0] == 'o' {
		r.kind = 'o'
		if f.resp.kind != '{' {
			return false
		}
		b := &f.respB
		status, ok := s.reqInt(b.status)
		if !ok || status < 100 || status > 999 {
			return false
		}
		if !headersOK(b.headers) {
			return false
		}
		body, ok := ls.content(b)
		if !ok {
			return false
		}
		r.status = status
		r.respHash = Hash(body)
		r.respLen = len(body)
		r.preview = ls.span(body[:min(len(body), PreviewBytes)])
		r.hdr1 = int32(len(ls.hdrs))
	} else if t[0] == 'f' {
		r.kind = 'f'
	}
	r.op, r.ns, r.msg = op, ns, ls.span(msg)
	return true
}

func (ls *lineScan) effect(f *lineFields, r *scanned) bool {
	s := &ls.sc
	id, ok1 := s.optStr(f.effect)
	tenant, ok2 := s.optStr(f.tenant)
	key, ok3 := s.optStr(f.key)
	intent, ok4 := s.optStr(f.intent)
	kind, ok5 := s.optStr(f.kind)
	ns, ok6 := s.optInt(f.ns)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || f.effect.kind != '"' || f.stated.kind != 0 || f.resource.kind != 0 {
		return false
	}
	if len(kind) == 0 {
		kind = id
		if i := bytes.IndexByte(id, ' '); i > 0 {
			kind = id[:i]
		}
	}
	r.kind = 'e'
	r.id, r.tenant, r.key, r.intent, r.effKind, r.ns = ls.span(id), ls.span(tenant), ls.span(key), ls.span(intent), ls.span(kind), ns
	return true
}

// client reads a client run's invocation or belief line as decodeClient
// does: its intent named; an invocation's tenant and payload (its action
// and error are not kept); a belief's kind, exit status, resource and
// error.
func (ls *lineScan) client(f *lineFields, belief bool, r *scanned) bool {
	s := &ls.sc
	intent, ok1 := s.optStr(f.intent)
	ns, ok2 := s.optInt(f.ns)
	msg, ok3 := s.optStr(f.error)
	if !(ok1 && ok2 && ok3) || len(intent) == 0 {
		return false
	}
	r.intent, r.ns, r.msg = ls.span(intent), ns, ls.span(msg)
	if !belief {
		tenant, ok1 := s.optStr(f.tenant)
		_, ok2 := s.optStr(f.action)
		body, ok3 := ls.content(&f.topB)
		if !(ok1 && ok2 && ok3) {
			return false
		}
		r.kind, r.tenant = 'v', ls.span(tenant)
		r.reqHash = Hash(body)
		r.reqCanon = ls.canon.hash(body, r.reqHash)
		return true
	}
	kind, ok1 := s.optStr(f.belief)
	exit, ok2 := s.optInt(f.exit)
	resource, ok3 := s.optStr(f.resource)
	if !(ok1 && ok2 && ok3) {
		return false
	}
	switch string(kind) {
	case BeliefSuccess, BeliefUnknown, BeliefFailure:
	default:
		return false
	}
	r.kind, r.effKind, r.attempt, r.id = 'b', ls.span(kind), exit, ls.span(resource)
	return true
}

// headersOK checks a "headers" value the way [Reader] does: absent, null,
// or an object of strings, which [lineScan.bodyField] checked as it read it
// (collecting the response headers that may be kept into hdrs).
func headersOK(t tok) bool {
	return t.kind == 0 || t.null || t.kind == '{'
}

// header checks that a header value is a string and collects it if it may
// be kept.
func (ls *lineScan) header(k []byte, at int) (int, bool) {
	if at >= len(ls.sc.line) || ls.sc.line[at] != '"' {
		return 0, false
	}
	v, end, ok := ls.sc.str(at)
	if !ok || !ls.keepHdrs {
		return end, ok
	}
	kept := false
	var b []byte
	for i, kb := range ls.keepB {
		if len(k) == len(kb) && bytes.EqualFold(k, kb) {
			if !kept {
				var ok bool
				if b, ok = ls.sc.text(v); !ok {
					return 0, false
				}
			}
			ls.hdrs = append(ls.hdrs, scannedHeader{name: ls.span(k), value: ls.span(b), keep: int32(i)})
			kept = true
		}
	}
	if !kept && ls.keepAny {
		if bytes.IndexByte(k, '\\') >= 0 {
			return 0, false // an escaped name: the reference path decodes it
		}
		b, ok := ls.sc.text(v)
		ls.hdrs = append(ls.hdrs, scannedHeader{name: ls.span(k), value: ls.span(b), keep: -1, bad: !ok})
	}
	return end, true
}

// content returns the body of a request or response, decoding body_b64 into
// the scanner's buffer.
func (ls *lineScan) content(b *bodyFields) ([]byte, bool) {
	s := &ls.sc
	if b.body.kind != 0 && !b.body.null {
		if b.body.kind != '"' {
			return nil, false
		}
		if b.textRead {
			return b.text, !b.textBad
		}
		return s.text(b.body)
	}
	if b.bodyB64.kind == 0 || b.bodyB64.null {
		return nil, true
	}
	if b.bodyB64.kind != '"' {
		return nil, false
	}
	text, ok := s.text(b.bodyB64)
	if !ok {
		return nil, false
	}
	start := len(s.esc)
	var err error
	s.esc, err = base64.StdEncoding.AppendDecode(s.esc, text)
	return s.esc[start:len(s.esc):len(s.esc)], err == nil
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

// loadFast is [Load] with workers scanning goroutines (serial below 2) and
// blocks of block bytes: the one entry to the fast paths.
func loadFast(r io.Reader, opts LoadOptions, workers, block int) (*History, error) {
	keep := opts.KeepHeaders
	if keep == nil {
		keep = DefaultKeepHeaders
	}
	h := &History{}
	l := newLoader(h, keep)
	l.keepFn = opts.KeepHeader
	z := sizer{left: inputSize(r)}
	if workers > 1 {
		return loadParallel(r, h, l, &z, workers, block)
	}
	return loadSerial(NewReader(r), h, l, &z)
}

// loadSerial reads the lines rd has left, one at a time.
func loadSerial(rd *Reader, h *History, l *loader, z *sizer) (*History, error) {
	var e Event
	for {
		raw, complete, err := rd.nextLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		z.line(len(raw)+1, l)
		if rd.sawMeta {
			handled, err := l.fast(raw)
			if err != nil {
				return nil, &LineError{Line: rd.Line(), Msg: err.Error()}
			}
			if handled {
				continue
			}
		}
		stop, err := l.slow(rd, raw, complete, &e)
		if err != nil {
			return nil, err
		}
		if stop {
			break
		}
	}
	return h.done(l, rd)
}
