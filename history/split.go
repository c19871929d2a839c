package history

import (
	"bufio"
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
	"github.com/valyala/fastjson"
)

// Split is a history cut into partitions by [SplitFile]: every attempt and
// effect of a key goes to one partition, so that the checks that judge a
// key's attempts together can judge each partition alone, and the facts of
// the whole history that some checks need travel beside them.
type Split struct {
	// KeyParts are the key partitions: partition i holds the meta, fault and
	// interrupted events, and the attempts and effects of the keys whose
	// hash is i. Groups joins the partitions an intent spanned (a client
	// that changed its key on a retry): a group is checked as one.
	KeyParts []Part
	Groups   [][]int
	// BodyParts are the response partitions: the meta event and every attempt
	// whose response body is not empty, by the hash of that body, for the
	// check that compares responses across keys (tenant-isolation).
	BodyParts []Part

	Meta         Event
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
	// Executed holds [TenantKeyHash] of the (tenant, key) of every effect:
	// tenant-isolation, judged over partitions by response body, asks it.
	Executed map[uint64]struct{}
	// Err is the first malformed line the split itself found (nil for
	// none): the lines before it are in the partitions, which may hold an
	// earlier error of their own.
	Err *LineError
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
// Memory grows with the number of distinct ops, intents and keys (a few
// bytes each), never with bodies: attempts still in flight keep their
// invoke line until they complete.
func SplitFile(r io.Reader, dir string, n int) (*Split, error) {
	if n < 1 {
		return nil, fmt.Errorf("split: %d partitions", n)
	}
	sp := &splitter{s: &Split{Executed: map[uint64]struct{}{}}, n: n, rd: NewReader(r), intents: map[uint64]int32{}, early: map[uint64][]int32{}, scopes: map[uint64]struct{}{}, open: map[int64]openInvoke{}, bigOps: map[int64]int32{}}
	sp.union = make([]int, n)
	for i := range sp.union {
		sp.union[i] = i
	}
	var err error
	if sp.keys, sp.s.KeyParts, err = createParts(dir, "key", n); err != nil {
		return nil, err
	}
	if sp.bodies, sp.s.BodyParts, err = createParts(dir, "body", n); err != nil {
		return nil, err
	}
	runErr := sp.run()
	for _, w := range append(sp.keys, sp.bodies...) {
		if cerr := w.close(); cerr != nil && runErr == nil {
			runErr = cerr
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	s := sp.s
	slices.Sort(s.Successes)
	s.Keys = len(sp.scopes)
	groups := map[int][]int{}
	for i := range n {
		root := sp.find(i)
		groups[root] = append(groups[root], i)
	}
	for i := range n {
		if g, ok := groups[i]; ok {
			s.Groups = append(s.Groups, g)
		}
	}
	if s.Events == 0 && s.Err == nil {
		s.Err = &LineError{Line: sp.rd.Line() + 1, Msg: `empty history: expected a meta event {"type":"meta","v":1,...}`}
	}
	return s, nil
}

type openInvoke struct {
	line int
	raw  []byte
}

type splitter struct {
	s       *Split
	n       int
	rd      *Reader
	keys    []*partWriter
	bodies  []*partWriter
	union   []int
	intents map[uint64]int32   // intent hash → key partition
	early   map[uint64][]int32 // partitions of effects that named an intent not yet invoked
	scopes  map[uint64]struct{}
	ops     []int32 // op → key partition + 1, for small non-negative ops
	bigOps  map[int64]int32
	open    map[int64]openInvoke
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
	typ      Type
	typed    bool // "type" is a string
	ns       int64
	op       int64
	key      uint64 // hash of the key (invoke, effect)
	intent   uint64
	named    bool   // an intent was given
	scope    uint64 // hash of (tenant, method, path, key); keyed says there is a key
	keyed    bool
	status   int
	body     uint64 // hash of a non-empty response body; bodied says there is one
	bodied   bool
	errorMsg string // interrupted: why
	tk       uint64 // effect: TenantKeyHash
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
	var e Event
	// The meta event is read as the loader reads it, with its errors.
	raw, complete, err := sp.rd.nextLine()
	if errors.Is(err, io.EOF) {
		return nil
	}
	var le *LineError
	if errors.As(err, &le) {
		sp.s.Err = le
		return nil
	}
	if err != nil {
		return err
	}
	v, err := sp.rd.parse(raw, complete)
	if errors.Is(err, ErrTruncated) {
		sp.s.Truncated = true
		return nil
	}
	if err == nil {
		_, err = sp.rd.decode(v, &e)
	}
	if errors.As(err, &le) {
		sp.s.Err = le
		return nil
	}
	if err != nil {
		return err
	}
	sp.s.Meta = e
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
				if errors.Is(f.err, ErrTruncated) {
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
			raw, complete, err := sp.rd.nextLine()
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
	v, err := parseLine(p, f.raw, complete, f.line)
	if err != nil {
		f.err = err
		return
	}
	t := v.Get("type")
	if t == nil || t.Type() != fastjson.TypeString {
		return
	}
	f.typed = true
	f.typ = Type(t.GetStringBytes())
	f.ns = v.GetInt64("ns")
	switch f.typ {
	case TypeInvoke:
		f.op = v.GetInt64("op")
		key := v.GetStringBytes("key")
		f.key = routeHash(key)
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.intent, f.named = maphash.Bytes(splitSeed, in), true
		}
		if len(key) > 0 {
			var hh maphash.Hash
			hh.SetSeed(splitSeed)
			for _, s := range [][]byte{v.GetStringBytes("tenant"), v.GetStringBytes("req", "method"), v.GetStringBytes("req", "path"), key} {
				hh.Write(s)
				hh.WriteByte(0)
			}
			f.scope, f.keyed = hh.Sum64(), true
		}
	case TypeOK, TypeInfo, TypeFail:
		f.op = v.GetInt64("op")
		if f.typ == TypeOK {
			f.status = v.GetInt("resp", "status")
			if rv := v.Get("resp"); rv != nil {
				if b, err := body(rv); err == nil && len(b) > 0 {
					f.body, f.bodied = routeHash(b), true
				}
			}
		}
	case TypeEffect:
		f.key = routeHash(v.GetStringBytes("key"))
		f.tk = tenantKeyHash(v.GetStringBytes("tenant"), v.GetStringBytes("key"))
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			f.intent, f.named = maphash.Bytes(splitSeed, in), true
		}
	case TypeInterrupted:
		f.errorMsg = string(v.GetStringBytes("error"))
	}
}

func (sp *splitter) part(h uint64) int32 { return int32(h % uint64(sp.n)) }

func (sp *splitter) route(f *fact) error {
	line, raw := f.line, f.raw
	switch f.typ {
	case TypeInvoke, TypeOK, TypeInfo, TypeFail, TypeEffect, TypeMeta, TypeFault, TypeInterrupted:
		sp.s.Events++
		sp.s.End = max(sp.s.End, f.ns)
	default:
		if f.typed {
			sp.s.Skipped++
		}
	}
	switch f.typ {
	case TypeInvoke:
		p := sp.part(f.key)
		if f.named {
			sp.s.IntentsKnown = true
			if q, ok := sp.intents[f.intent]; ok && q != p {
				sp.join(int(q), int(p))
			} else if !ok {
				sp.intents[f.intent] = p
				// An effect named this intent before it was invoked: the
				// check attributes it to the intent all the same.
				for _, q := range sp.early[f.intent] {
					sp.join(int(q), int(p))
				}
				delete(sp.early, f.intent)
			}
		}
		if f.keyed {
			sp.scopes[f.scope] = struct{}{}
		}
		if q, seen := sp.opPart(f.op); seen {
			p = q // a second invoke of an op: its loader says so
		} else {
			sp.setOp(f.op, p)
			sp.open[f.op] = openInvoke{line: line, raw: append([]byte(nil), raw...)}
		}
		if err := sp.keys[p].invoked(line); err != nil {
			return err
		}
		return sp.keys[p].write(line, raw)
	case TypeOK, TypeInfo, TypeFail:
		p, _ := sp.opPart(f.op) // an unknown op goes to 0, whose loader says so
		if f.typ == TypeOK {
			sp.s.Answers++
			if f.status >= 500 {
				sp.s.Failures++
			}
			if f.status >= 200 && f.status < 300 {
				sp.s.Successes = append(sp.s.Successes, f.ns)
			}
			if inv, ok := sp.open[f.op]; ok && f.bodied {
				w := sp.bodies[sp.part(f.body)]
				if err := w.write(inv.line, inv.raw); err != nil {
					return err
				}
				if err := w.write(line, raw); err != nil {
					return err
				}
			}
		}
		delete(sp.open, f.op)
		return sp.keys[p].write(line, raw)
	case TypeEffect:
		sp.s.EffectsKnown = true
		sp.s.Executed[f.tk] = struct{}{}
		p := sp.part(f.key)
		if f.named {
			if q, ok := sp.intents[f.intent]; ok {
				p = q
			} else if !slices.Contains(sp.early[f.intent], p) {
				// By its key for now (the check falls back to the key if
				// the intent never comes); joined with it if it does.
				sp.early[f.intent] = append(sp.early[f.intent], p)
			}
		}
		return sp.keys[p].write(line, raw)
	case TypeInterrupted:
		sp.s.Interrupted = f.errorMsg
		if sp.s.Interrupted == "" {
			sp.s.Interrupted = "interrupted"
		}
	case TypeMeta, TypeFault:
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

func (sp *splitter) find(i int) int {
	for sp.union[i] != i {
		sp.union[i] = sp.union[sp.union[i]]
		i = sp.union[i]
	}
	return i
}

func (sp *splitter) join(a, b int) {
	ra, rb := sp.find(a), sp.find(b)
	if ra > rb {
		ra, rb = rb, ra
	}
	sp.union[rb] = ra
}

type partWriter struct {
	f, lf, inf *os.File
	w, lw, inw *bufio.Writer
	scratch    [8]byte
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
		err = errors.Join(err, w.inw.Flush(), w.inf.Close())
	}
	return errors.Join(err, w.f.Close(), w.lf.Close())
}

// TenantKeyHash is the hash [Split.Executed] holds for a (tenant, key).
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
