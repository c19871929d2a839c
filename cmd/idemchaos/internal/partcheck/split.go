package partcheck

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/unionfind"
	"github.com/valyala/fastjson"
)

// Split is a history cut into partitions by [SplitFile]: every attempt and
// effect of a key goes to one partition, so that the checks that judge a
// key's attempts together can judge each partition alone, and the facts of
// the whole history that some checks need travel beside them.
type Split struct {
	// KeyParts are the key partitions: partition i holds the meta, fault and
	// interrupted events (but a fault aimed at one attempt, after the first
	// of its kind, only in that attempt's partition), and the attempts and
	// effects of the keys whose hash is i. Groups joins the partitions an
	// intent spanned (a client that changed its key on a retry): a group is
	// checked as one. A client run's history is cut by intent instead: the
	// invocation, attempts, belief and effects of the intents whose hash is
	// i, whatever keys they sent, and Groups joins the partitions of
	// intents that sent one key (the client invariants that compare intents
	// by key: key-per-intent, and the causes that name the key's owner).
	KeyParts []Part
	Groups   [][]int
	// BodyParts are the response partitions: the meta event and every attempt
	// answered 2xx with a body that is not empty, by the hash of that body,
	// for the check that compares responses across keys (tenant-isolation,
	// which judges those answers alone).
	BodyParts []Part
	// Unrouted counts, by body partition, the 2xx answers not written to
	// it because their body was already known generic: a tenant received
	// it under two keys, in answers written there, so tenant-isolation
	// finds no leak in it and only counts them (see [SplitFile]).
	Unrouted []int

	Meta         history.Event
	Events       int
	End          int64
	Skipped      int
	Truncated    bool
	Interrupted  string
	EffectsKnown bool
	IntentsKnown bool
	// Successes are the completion times of every 2xx answer, sorted;
	// Answers counts the ok events and Failures those with a 5xx; Keys the
	// distinct (tenant, method, path, key) scopes with a key.
	Successes         []int64
	Answers, Failures int
	Keys              int
	// Err is the first malformed line the split itself found (nil for
	// none): the lines before it are in the partitions, which may hold an
	// earlier error of their own.
	Err *history.LineError

	// executed is the file of [TenantKeyHash]es of the (tenant, key) of
	// every effect, read into tks on the first question ([Split.Executed]).
	executed string
	once     sync.Once
	tks      []uint64
	tkErr    error
}

// Executed says whether the (tenant, key) has an effect in the history:
// tenant-isolation, judged over partitions by response body, asks it. The
// hashes wait on disk until the first question (a clean history asks
// none), then take 8 bytes per distinct (tenant, key) with an effect.
func (s *Split) Executed(tenant, key string) (bool, error) {
	s.once.Do(func() {
		b, err := os.ReadFile(s.executed)
		if err != nil {
			s.tkErr = err
			return
		}
		s.tks = make([]uint64, len(b)/8)
		for i := range s.tks {
			s.tks[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		slices.Sort(s.tks)
		s.tks = slices.Clip(slices.Compact(s.tks))
	})
	if s.tkErr != nil {
		return false, s.tkErr
	}
	_, ok := slices.BinarySearch(s.tks, TenantKeyHash(tenant, key))
	return ok, nil
}

// Part is one partition: a JSONL file and, beside it, the line number in
// the original history of each of its lines (8 bytes each, little endian).
type Part struct {
	File, Lines string
	// Invokes, for a key partition, holds the original line numbers of its
	// invoke events alone: the place of each attempt in the history.
	Invokes string
}

// SplitFile reads the history in r once and writes its partitions into dir.
// Memory grows only with the number of ops (4 bytes each) and of 2xx
// answers (8 bytes each, [Split.Successes]), never with bodies: attempts
// still in flight keep their invoke line until they complete. What the
// split learns of intents, scopes and effects goes to files beside the
// partitions and is read back a partition at a time.
//
// A body that many answers share ({"ok":true}) would crowd one body
// partition. Tenant-isolation ignores a body some tenant received under
// two keys (generic), so once the split has written two such answers of a
// body to its partition, it writes no further answer of it there and
// counts it in [Split.Unrouted]; it tracks a bounded number of bodies at
// a time, so a body it lost track of is written again, which is only
// slower.
func SplitFile(r io.Reader, dir string, n int) (*Split, error) {
	if n < 1 {
		return nil, fmt.Errorf("split: %d partitions", n)
	}
	sp := &splitter{s: &Split{executed: filepath.Join(dir, "executed"), Unrouted: make([]int, n)}, n: n, hot: make([]hotBody, hotSlots), rd: history.NewReader(r), open: map[int64]openInvoke{}, kinds: map[string]bool{}, bigOps: map[int64]int32{}}
	sp.union = unionfind.New(n)
	var err error
	if sp.keys, sp.s.KeyParts, err = createParts(dir, "key", n); err != nil {
		return nil, err
	}
	if sp.bodies, sp.s.BodyParts, err = createParts(dir, "body", n); err != nil {
		return nil, err
	}
	if sp.intents, err = createSides(dir, "intents", n); err != nil {
		return nil, err
	}
	if sp.executed, err = createSide(sp.s.executed); err != nil {
		return nil, err
	}
	runErr := sp.run()
	for _, w := range append(sp.keys, sp.bodies...) {
		if cerr := w.close(); cerr != nil && runErr == nil {
			runErr = cerr
		}
	}
	for _, w := range append(sp.intents, sp.executed) {
		if cerr := w.close(); cerr != nil && runErr == nil {
			runErr = cerr
		}
	}
	if runErr == nil {
		runErr = sp.joinIntents()
	}
	if runErr == nil {
		runErr = sp.countScopes()
	}
	if runErr != nil {
		return nil, runErr
	}
	s := sp.s
	slices.Sort(s.Successes)
	s.Successes = slices.Clip(s.Successes)
	groups := map[int][]int{}
	for i := range n {
		root := int(sp.union.Find(int32(i)))
		groups[root] = append(groups[root], i)
	}
	for i := range n {
		if g, ok := groups[i]; ok {
			s.Groups = append(s.Groups, g)
		}
	}
	if s.Events == 0 && s.Err == nil {
		s.Err = &history.LineError{Line: sp.rd.Line() + 1, Msg: `empty history: expected a meta event {"type":"meta","v":1,...}`}
	}
	return s, nil
}

type openInvoke struct {
	line        int
	raw         []byte
	tenant, key uint64 // hashes
}

type splitter struct {
	s      *Split
	n      int
	client bool // a client run's history: cut by intent
	rd     *history.Reader
	keys   []*partWriter
	bodies []*partWriter
	union  unionfind.Sets // the partitions an intent joins
	// intents are the files of intent records (the intent's hash and the
	// key partition of an invoke or effect that named it), by intent hash:
	// after the split, each is read alone to join the partitions an intent
	// spanned, rather than a map of every intent growing with the history.
	intents  []*sideWriter
	executed *sideWriter     // TenantKeyHash of every effect
	hot      []hotBody       // bodies tracked for genericity, by body hash
	kinds    map[string]bool // kinds of the faults written to every key partition
	ops      []int32         // op → key partition + 1, for small non-negative ops
	bigOps   map[int64]int32
	open     map[int64]openInvoke
}

var splitSeed = maphash.MakeSeed()

// routeHash is the hash that picks a key's (or a response body's)
// partition. Unlike splitSeed's hashes, which only key maps of this
// process, it must be the same in every process: check --partition I/N
// on N machines relies on each cutting the history the same way.
func routeHash(b []byte) uint64 { return xxhash.Sum64(b) }

// fact is what the split needs of one line, read from it by a parsing
// worker so that the routing, which keeps the state, stays one cheap loop.
type fact struct {
	line     int
	raw      []byte
	err      error // a malformed line (ErrTruncated for a cut-off last one)
	typ      history.Type
	typed    bool // "type" is a string
	ns       int64
	op       int64
	key      uint64 // hash of the key (invoke, effect)
	tenant   uint64 // invoke: hash of the tenant
	intent   uint64
	named    bool   // an intent was given
	byIntent uint64 // routeHash of the intent: a client history's partition
	scope    uint64 // hash of (tenant, method, path, key); keyed says there is a key
	keyed    bool
	status   int
	body     uint64 // hash of a non-empty response body; bodied says there is one
	bodied   bool
	errorMsg string // interrupted: why
	fault    string // fault: its kind, "" for one aimed at one attempt that may stay in its partition

	tk uint64 // effect, and a keyed invoke: TenantKeyHash
}

// batch is a run of lines read together and parsed by one worker.
type batch struct {
	data  []byte
	facts []fact
	end   error // what stopped the reader after these lines (nil: more follow)
	done  chan struct{}
}

const batchLines = 2048

func (sp *splitter) run() error {
	var e history.Event
	// The meta event is read as the loader reads it, with its errors.
	raw, complete, err := sp.rd.RawLine()
	if errors.Is(err, io.EOF) {
		return nil
	}
	var le *history.LineError
	if errors.As(err, &le) {
		sp.s.Err = le
		return nil
	}
	if err != nil {
		return err
	}
	err = sp.rd.DecodeLine(raw, complete, &e)
	if errors.Is(err, history.ErrTruncated) {
		sp.s.Truncated = true
		return nil
	}
	if errors.As(err, &le) {
		sp.s.Err = le
		return nil
	}
	if err != nil {
		return err
	}
	sp.s.Meta = e
	sp.client = e.Mode == history.ModeClient
	sp.s.EffectsKnown = e.EffectsRecorded
	sp.s.Events++
	sp.s.End = max(sp.s.End, e.NS)
	for _, w := range append(sp.keys[:len(sp.keys):len(sp.keys)], sp.bodies...) {
		if err := w.write(sp.rd.Line(), raw); err != nil {
			return err
		}
	}

	// Then a pipeline: one reader, a parsing worker per core, and this
	// goroutine routing the parsed lines in their order.
	workers := max(1, runtime.GOMAXPROCS(0))
	work := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// On an early return the reader must stop before the workers can end.
	defer wg.Wait()
	defer close(stop)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sp.read(work, order, stop)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p fastjson.Parser
			for b := range work {
				for i := range b.facts {
					parseFact(&p, &b.facts[i])
				}
				close(b.done)
			}
		}()
	}
	for b := range order {
		<-b.done
		for i := range b.facts {
			f := &b.facts[i]
			if f.err != nil {
				if errors.Is(f.err, history.ErrTruncated) {
					sp.s.Truncated = true
					return nil
				}
				if errors.As(f.err, &le) {
					sp.s.Err = le
					return nil
				}
				return f.err
			}
			if err := sp.route(f); err != nil {
				return err
			}
		}
		if b.end != nil {
			if errors.As(b.end, &le) {
				sp.s.Err = le
				return nil
			}
			return b.end
		}
	}
	return nil
}

// read cuts the history into batches of lines, copied out of the reader's
// buffer, and hands each to the workers and, in order, to the router.
func (sp *splitter) read(work, order chan<- *batch, stop <-chan struct{}) {
	defer close(work)
	defer close(order)
	for {
		b := &batch{done: make(chan struct{}), facts: make([]fact, 0, batchLines)}
		for len(b.facts) < batchLines {
			raw, complete, err := sp.rd.RawLine()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.end = err
				break
			}
			start := len(b.data)
			b.data = append(b.data, raw...)
			f := fact{line: sp.rd.Line(), raw: b.data[start:len(b.data):len(b.data)]}
			if !complete {
				f.err = errIncomplete
			}
			b.facts = append(b.facts, f)
		}
		// The lines point into data, which grew: point them again.
		off := 0
		for i := range b.facts {
			n := len(b.facts[i].raw)
			b.facts[i].raw = b.data[off : off+n : off+n]
			off += n
		}
		last := len(b.facts) < batchLines || b.end != nil
		select {
		case order <- b:
		case <-stop:
			return
		}
		select {
		case work <- b:
		case <-stop:
			return
		}
		if last {
			return
		}
	}
}

// errIncomplete marks a last line without a newline until it is parsed.
var errIncomplete = errors.New("incomplete")

// parseFact parses one line and reads what the router needs.
func parseFact(p *fastjson.Parser, f *fact) {
	complete := f.err == nil
	f.err = nil
	v, err := history.ParseLine(p, f.raw, complete, f.line)
	if err != nil {
		f.err = err
		return
	}
	t := v.Get("type")
	if t == nil || t.Type() != fastjson.TypeString {
		return
	}
	f.typed = true
	f.typ = history.Type(t.GetStringBytes())
	f.ns = v.GetInt64("ns")
	switch f.typ {
	case history.TypeInvoke:
		f.op = v.GetInt64("op")
		key := v.GetStringBytes("key")
		f.key = routeHash(key)
		f.tenant = routeHash(v.GetStringBytes("tenant"))
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.intent, f.named, f.byIntent = maphash.Bytes(splitSeed, in), true, routeHash(in)
		}
		if len(key) > 0 {
			f.tk = tenantKeyHash(v.GetStringBytes("tenant"), key)
			var hh maphash.Hash
			hh.SetSeed(splitSeed)
			for _, s := range [][]byte{v.GetStringBytes("tenant"), v.GetStringBytes("req", "method"), v.GetStringBytes("req", "path"), key} {
				hh.Write(s)
				hh.WriteByte(0)
			}
			f.scope, f.keyed = hh.Sum64(), true
		}
	case history.TypeOK, history.TypeInfo, history.TypeFail:
		f.op = v.GetInt64("op")
		if f.typ == history.TypeOK {
			f.status = v.GetInt("resp", "status")
			if rv := v.Get("resp"); rv != nil {
				if b, err := history.ResponseBody(rv); err == nil && len(b) > 0 {
					f.body, f.bodied = routeHash(b), true
				}
			}
		}
	case history.TypeEffect:
		f.key = routeHash(v.GetStringBytes("key"))
		f.tk = tenantKeyHash(v.GetStringBytes("tenant"), v.GetStringBytes("key"))
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.intent, f.named, f.byIntent = maphash.Bytes(splitSeed, in), true, routeHash(in)
		}
	case history.TypeInvocation, history.TypeBelief:
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.named, f.byIntent = true, routeHash(in)
		}
	case history.TypeAck, history.TypeDelivery:
		f.key = routeHash(v.GetStringBytes("key"))
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.intent, f.named = maphash.Bytes(splitSeed, in), true
		}
	case history.TypeInterrupted:
		f.errorMsg = string(v.GetStringBytes("error"))
	case history.TypeFault:
		f.op = v.GetInt64("op")
		if a := v.GetStringBytes("action"); f.op != 0 && (len(a) == 0 || string(a) == "fire") {
			f.fault = string(v.GetStringBytes("fault"))
		}
	}
}

func (sp *splitter) part(h uint64) int32 { return int32(h % uint64(sp.n)) }

func (sp *splitter) route(f *fact) error {
	line, raw := f.line, f.raw
	switch f.typ {
	case history.TypeInvoke, history.TypeOK, history.TypeInfo, history.TypeFail, history.TypeEffect, history.TypeAck, history.TypeDelivery, history.TypeMeta, history.TypeFault, history.TypeInterrupted,
		history.TypeStep, history.TypeBudget, history.TypeEnvironment, history.TypeOracle, history.TypeSettled, // these five, like an unknown type, go to every key partition
		history.TypeInvocation, history.TypeBelief:
		sp.s.Events++
		sp.s.End = max(sp.s.End, f.ns)
	default:
		if f.typed {
			sp.s.Skipped++
		}
	}
	switch f.typ {
	case history.TypeInvoke:
		p := sp.part(f.key)
		switch {
		case sp.client && f.named:
			// A client history is cut by intent: every attempt of an
			// intent, whatever key it carried, is in one partition; the
			// partitions of intents that sent one key are joined after
			// the split (key-per-intent compares them).
			sp.s.IntentsKnown = true
			p = sp.part(f.byIntent)
			if f.keyed {
				if err := sp.intent(f.tk, p, false); err != nil {
					return err
				}
			}
		case f.named:
			sp.s.IntentsKnown = true
			if err := sp.intent(f.intent, p, false); err != nil {
				return err
			}
		}
		if f.keyed {
			// A scope includes its key, so all of its invokes are in
			// partition p: counted there, after the split.
			if err := sp.keys[p].scope(f.scope); err != nil {
				return err
			}
		}
		if q, seen := sp.opPart(f.op); seen {
			p = q // a second invoke of an op: its loader says so
		} else {
			sp.setOp(f.op, p)
			sp.open[f.op] = openInvoke{line: line, raw: append([]byte(nil), raw...), tenant: f.tenant, key: f.key}
		}
		if err := sp.keys[p].invoked(line); err != nil {
			return err
		}
		return sp.keys[p].write(line, raw)
	case history.TypeOK, history.TypeInfo, history.TypeFail:
		p, _ := sp.opPart(f.op) // an unknown op goes to 0, whose loader says so
		if f.typ == history.TypeOK {
			sp.s.Answers++
			if f.status >= 500 {
				sp.s.Failures++
			}
			if f.status >= 200 && f.status < 300 {
				sp.s.Successes = append(sp.s.Successes, f.ns)
			}
			// Tenant-isolation judges the 2xx answers with a body alone:
			// the others (a 409's problem document, identical across the
			// history) would crowd one body partition for nothing.
			if inv, ok := sp.open[f.op]; ok && f.bodied && f.status >= 200 && f.status < 300 {
				if err := sp.toBody(f, inv); err != nil {
					return err
				}
			}
		}
		delete(sp.open, f.op)
		return sp.keys[p].write(line, raw)
	case history.TypeEffect:
		sp.s.EffectsKnown = true
		if err := sp.executed.uint64(f.tk); err != nil {
			return err
		}
		// By its key (the check falls back to the key if the intent is
		// never invoked); joined after the split with the partitions of
		// its intent's invokes, before or after it, if there are any.
		p := sp.part(f.key)
		switch {
		case sp.client && f.named:
			// With its intent; an effect naming no intent is counted
			// against none, wherever it is.
			p = sp.part(f.byIntent)
		case f.named:
			if err := sp.intent(f.intent, p, true); err != nil {
				return err
			}
		}
		return sp.keys[p].write(line, raw)
	case history.TypeInvocation, history.TypeBelief:
		if sp.client && f.named {
			return sp.keys[sp.part(f.byIntent)].write(line, raw)
		}
	case history.TypeAck, history.TypeDelivery:
		// By its key, with the message's publishes and the effects that
		// name its key: no-lost-message looks for its effect there, and
		// bounded-redelivery for its publish, acks and delivery count.
		// Named by its intent, it is joined after the split with the
		// partitions of that intent's publishes, as an effect is.
		p := sp.part(f.key)
		if f.named && !sp.client {
			if err := sp.intent(f.intent, p, true); err != nil {
				return err
			}
		}
		return sp.keys[p].write(line, raw)
	case history.TypeInterrupted:
		sp.s.Interrupted = f.errorMsg
		if sp.s.Interrupted == "" {
			sp.s.Interrupted = "interrupted"
		}
	case history.TypeFault:
		// A fault aimed at one attempt matters to that attempt's checks
		// alone, once a fault of its kind is in every partition: a
		// response-drop per retried intent, copied into each of hundreds
		// of partitions, made most of what each one loaded.
		if local(f.fault) && sp.kinds[f.fault] {
			if p, ok := sp.opPart(f.op); ok {
				return sp.keys[p].write(line, raw)
			}
		}
		if f.fault != "" {
			sp.kinds[f.fault] = true
		}
	case history.TypeStep:
		// Tenant-isolation judges the body partitions step by step too.
		for _, w := range sp.bodies {
			if err := w.write(line, raw); err != nil {
				return err
			}
		}
	case history.TypeMeta:
	default:
		if !f.typed {
			return sp.keys[0].write(line, raw) // not an event: partition 0's loader says why
		}
	}
	for _, w := range sp.keys {
		if err := w.write(line, raw); err != nil {
			return err
		}
	}
	return nil
}

// local says whether a fault of the kind, fired at one attempt, can be
// written to that attempt's key partition alone. The checks read such a
// fault by its op (the attempt it hit), or ask whether the history has a
// fault of its kind at all (so the first of each kind goes to every
// partition); a crash, a purge (retention-expiry) and replica lag they
// also read by time, across keys: those go to every partition.
func local(kind string) bool {
	switch kind {
	case "", "crash", "retention-expiry", "replica-lag":
		return false
	}
	return true
}

// toBody writes a 2xx answer with a body, and its invoke, to the body
// partition of the body, unless the body is known generic.
func (sp *splitter) toBody(f *fact, inv openInvoke) error {
	bp := sp.part(f.body)
	if sp.generic(f.body, inv.tenant, inv.key) {
		sp.s.Unrouted[bp]++
		return nil
	}
	w := sp.bodies[bp]
	if err := w.write(inv.line, inv.raw); err != nil {
		return err
	}
	return w.write(f.line, f.raw)
}

// hotSlots is how many bodies the split tracks at once (~80 bytes each).
const hotSlots = 1 << 12

// hotBody is what the split knows of a body from the answers it wrote to
// the body's partition since it began tracking it: the first key of each
// of its first few tenants, and whether a tenant received it under a
// second key (generic). Answers written before tracking began are in the
// partition too, so what it knows holds there, which is all it needs.
type hotBody struct {
	body    uint64
	used    bool
	generic bool
	n       int // firsts in use
	firsts  [4]struct{ tenant, key uint64 }
}

// generic says whether the body of an answer to (tenant, key) is already
// known generic, and otherwise learns from the answer, which the caller
// then writes to the body's partition.
func (sp *splitter) generic(body, tenant, key uint64) bool {
	e := &sp.hot[body%hotSlots]
	if !e.used || e.body != body {
		if e.used && e.generic {
			return false // a generic body keeps its slot: it is the one worth it
		}
		*e = hotBody{body: body, used: true}
	}
	if e.generic {
		return true
	}
	for _, f := range e.firsts[:e.n] {
		if f.tenant == tenant {
			e.generic = f.key != key
			return false
		}
	}
	if e.n < len(e.firsts) {
		e.firsts[e.n].tenant, e.firsts[e.n].key = tenant, key
		e.n++
	}
	return false
}

// maxDenseOp bounds the ops kept in a slice (4 bytes each); larger or
// negative op ids, rare, go in a map.
const maxDenseOp = 1 << 28

func (sp *splitter) opPart(op int64) (int32, bool) {
	if op >= 0 && op < maxDenseOp {
		if op < int64(len(sp.ops)) && sp.ops[op] > 0 {
			return sp.ops[op] - 1, true
		}
		return 0, false
	}
	p, ok := sp.bigOps[op]
	return p, ok
}

func (sp *splitter) setOp(op int64, p int32) {
	if op >= 0 && op < maxDenseOp {
		if op >= int64(len(sp.ops)) {
			sp.ops = slices.Grow(sp.ops, int(op)+1-len(sp.ops))[:op+1]
		}
		sp.ops[op] = p + 1
		return
	}
	sp.bigOps[op] = p
}

// intent notes that an invoke (or an effect) in key partition p named the
// intent with hash h.
func (sp *splitter) intent(h uint64, p int32, effect bool) error {
	v := uint32(p)
	if effect {
		v |= effectBit
	}
	w := sp.intents[h%uint64(len(sp.intents))]
	if err := w.uint64(h); err != nil {
		return err
	}
	return w.uint32(v)
}

// effectBit marks an intent record of an effect.
const effectBit = 1 << 31

// joinIntents reads the intent records file by file and joins the key
// partitions of each intent: those of its invokes, and those of its
// effects when it was invoked at all (an effect of an intent never
// invoked is judged by its key alone).
func (sp *splitter) joinIntents() error {
	type rec struct {
		h uint64
		v uint32
	}
	var recs []rec
	for _, w := range sp.intents {
		b, err := os.ReadFile(w.name)
		if err != nil {
			return err
		}
		recs = recs[:0]
		for i := 0; i+12 <= len(b); i += 12 {
			recs = append(recs, rec{binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint32(b[i+8:])})
		}
		slices.SortFunc(recs, func(a, b rec) int {
			if a.h != b.h {
				return cmp.Compare(a.h, b.h)
			}
			return cmp.Compare(a.v, b.v) // invokes, without the effect bit, first
		})
		for i := 0; i < len(recs); {
			j := i + 1
			for j < len(recs) && recs[j].h == recs[i].h {
				j++
			}
			if recs[i].v&effectBit == 0 {
				for _, r := range recs[i+1 : j] {
					sp.union.Join(int32(recs[i].v), int32(r.v&^effectBit))
				}
			}
			i = j
		}
		if err := os.Remove(w.name); err != nil {
			return err
		}
	}
	return nil
}

// countScopes counts the distinct scopes of each key partition, from the
// hashes its invokes left beside it: their sum is the history's.
func (sp *splitter) countScopes() error {
	var hs []uint64
	for _, w := range sp.keys {
		b, err := os.ReadFile(w.scopes)
		if err != nil {
			return err
		}
		hs = hs[:0]
		for i := 0; i+8 <= len(b); i += 8 {
			hs = append(hs, binary.LittleEndian.Uint64(b[i:]))
		}
		slices.Sort(hs)
		sp.s.Keys += len(slices.Compact(hs))
		if err := os.Remove(w.scopes); err != nil {
			return err
		}
	}
	return nil
}

type partWriter struct {
	f, lf, inf, sf *os.File
	w, lw, inw, sw *bufio.Writer
	scratch        [8]byte
	scopes         string // a key partition's file of scope hashes
}

// scope notes the hash of a scope invoked in the partition.
func (w *partWriter) scope(h uint64) error {
	binary.LittleEndian.PutUint64(w.scratch[:], h)
	_, err := w.sw.Write(w.scratch[:])
	return err
}

// invoked notes the line of an invoke event written to the partition.
func (w *partWriter) invoked(line int) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(line))
	_, err := w.inw.Write(b[:])
	return err
}

func createParts(dir, kind string, n int) ([]*partWriter, []Part, error) {
	ws := make([]*partWriter, n)
	parts := make([]Part, n)
	for i := range n {
		p := Part{File: filepath.Join(dir, kind+strconv.Itoa(i)+".jsonl"), Lines: filepath.Join(dir, kind+strconv.Itoa(i)+".lines")}
		f, err := os.Create(p.File)
		if err != nil {
			return nil, nil, err
		}
		lf, err := os.Create(p.Lines)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		ws[i] = &partWriter{f: f, lf: lf, w: bufio.NewWriterSize(f, 64<<10), lw: bufio.NewWriterSize(lf, 8<<10)}
		if kind == "key" {
			p.Invokes = filepath.Join(dir, kind+strconv.Itoa(i)+".invokes")
			if ws[i].inf, err = os.Create(p.Invokes); err != nil {
				f.Close()
				lf.Close()
				return nil, nil, err
			}
			ws[i].inw = bufio.NewWriterSize(ws[i].inf, 8<<10)
			ws[i].scopes = filepath.Join(dir, kind+strconv.Itoa(i)+".scopes")
			if ws[i].sf, err = os.Create(ws[i].scopes); err != nil {
				f.Close()
				lf.Close()
				ws[i].inf.Close()
				return nil, nil, err
			}
			ws[i].sw = bufio.NewWriterSize(ws[i].sf, 4<<10)
		}
		parts[i] = p
	}
	return ws, parts, nil
}

func (w *partWriter) write(line int, raw []byte) error {
	binary.LittleEndian.PutUint64(w.scratch[:], uint64(line))
	if _, err := w.lw.Write(w.scratch[:]); err != nil {
		return err
	}
	if _, err := w.w.Write(raw); err != nil {
		return err
	}
	return w.w.WriteByte('\n')
}

func (w *partWriter) close() error {
	err := errors.Join(w.w.Flush(), w.lw.Flush())
	if w.inw != nil {
		err = errors.Join(err, w.inw.Flush(), w.inf.Close(), w.sw.Flush(), w.sf.Close())
	}
	return errors.Join(err, w.f.Close(), w.lf.Close())
}

// sideWriter writes fixed-size records of the split's facts to a file.
type sideWriter struct {
	name    string
	f       *os.File
	w       *bufio.Writer
	scratch [8]byte
}

func createSide(name string) (*sideWriter, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &sideWriter{name: name, f: f, w: bufio.NewWriterSize(f, 4<<10)}, nil
}

func createSides(dir, kind string, n int) ([]*sideWriter, error) {
	ws := make([]*sideWriter, n)
	for i := range ws {
		var err error
		if ws[i], err = createSide(filepath.Join(dir, kind+strconv.Itoa(i))); err != nil {
			for _, w := range ws[:i] {
				w.f.Close()
			}
			return nil, err
		}
	}
	return ws, nil
}

func (w *sideWriter) uint64(v uint64) error {
	binary.LittleEndian.PutUint64(w.scratch[:], v)
	_, err := w.w.Write(w.scratch[:])
	return err
}

func (w *sideWriter) uint32(v uint32) error {
	binary.LittleEndian.PutUint32(w.scratch[:4], v)
	_, err := w.w.Write(w.scratch[:4])
	return err
}

func (w *sideWriter) close() error { return errors.Join(w.w.Flush(), w.f.Close()) }

// TenantKeyHash is the hash [Split.Executed] looks up for a (tenant, key).
func TenantKeyHash(tenant, key string) uint64 {
	return tenantKeyHash([]byte(tenant), []byte(key))
}

func tenantKeyHash(tenant, key []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(splitSeed)
	h.Write(tenant)
	h.WriteByte(0)
	h.Write(key)
	return h.Sum64()
}
