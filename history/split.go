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
	"slices"
	"strconv"

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
	// Err is the first malformed line the split itself found (nil for
	// none): the lines before it are in the partitions, which may hold an
	// earlier error of their own.
	Err *LineError
}

// Part is one partition: a JSONL file and, beside it, the line number in
// the original history of each of its lines (8 bytes each, little endian).
type Part struct {
	File, Lines string
}

// SplitFile reads the history in r once and writes its partitions into dir.
// Memory grows with the number of distinct ops, intents and keys (a few
// bytes each), never with bodies: attempts still in flight keep their
// invoke line until they complete.
func SplitFile(r io.Reader, dir string, n int) (*Split, error) {
	if n < 1 {
		return nil, fmt.Errorf("split: %d partitions", n)
	}
	sp := &splitter{s: &Split{}, n: n, rd: NewReader(r), intents: map[uint64]int32{}, early: map[uint64]int32{}, scopes: map[uint64]struct{}{}, open: map[int64]openInvoke{}, bigOps: map[int64]int32{}}
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
	intents map[uint64]int32 // intent hash → key partition
	early   map[uint64]int32 // effects that named an intent not yet invoked
	scopes  map[uint64]struct{}
	ops     []int32 // op → key partition + 1, for small non-negative ops
	bigOps  map[int64]int32
	open    map[int64]openInvoke
}

var splitSeed = maphash.MakeSeed()

func (sp *splitter) run() error {
	all := func(ws []*partWriter, raw []byte) error {
		for _, w := range ws {
			if err := w.write(sp.rd.Line(), raw); err != nil {
				return err
			}
		}
		return nil
	}
	var e Event
	for {
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
		if errors.As(err, &le) {
			sp.s.Err = le
			return nil
		}
		if !sp.rd.sawMeta {
			// The meta event is read as the loader reads it, with its errors.
			if _, err := sp.rd.decode(v, &e); err != nil {
				if errors.As(err, &le) {
					sp.s.Err = le
					return nil
				}
				return err
			}
			sp.s.Meta = e
			sp.s.EffectsKnown = e.EffectsRecorded
			sp.count(v)
			if err := all(sp.keys, raw); err != nil {
				return err
			}
			if err := all(sp.bodies, raw); err != nil {
				return err
			}
			continue
		}
		if err := sp.route(v, raw); err != nil {
			return err
		}
	}
}

// count counts a known event and its time, as the loader does.
func (sp *splitter) count(v *fastjson.Value) {
	sp.s.Events++
	if ns := v.GetInt64("ns"); ns > sp.s.End {
		sp.s.End = ns
	}
}

func (sp *splitter) part(b []byte) int32 {
	return int32(maphash.Bytes(splitSeed, b) % uint64(sp.n))
}

func (sp *splitter) route(v *fastjson.Value, raw []byte) error {
	line := sp.rd.Line()
	typ := Type(v.GetStringBytes("type"))
	switch typ {
	case TypeInvoke, TypeOK, TypeInfo, TypeFail, TypeEffect, TypeMeta, TypeFault, TypeInterrupted:
		sp.count(v)
	default:
		if v.Get("type") != nil && v.Get("type").Type() == fastjson.TypeString {
			sp.s.Skipped++
		}
	}
	switch typ {
	case TypeInvoke:
		key := v.GetStringBytes("key")
		p := sp.part(key)
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			sp.s.IntentsKnown = true
			ih := maphash.Bytes(splitSeed, in)
			if q, ok := sp.intents[ih]; ok && q != p {
				sp.join(int(q), int(p))
			} else if !ok {
				sp.intents[ih] = p
				// An effect named this intent before it was invoked: the
				// check attributes it to the intent all the same.
				if q, early := sp.early[ih]; early && q != p {
					sp.join(int(q), int(p))
				}
			}
		}
		if len(key) > 0 {
			var hh maphash.Hash
			hh.SetSeed(splitSeed)
			for _, f := range [][]byte{v.GetStringBytes("tenant"), v.GetStringBytes("req", "method"), v.GetStringBytes("req", "path"), key} {
				hh.Write(f)
				hh.WriteByte(0)
			}
			sp.scopes[hh.Sum64()] = struct{}{}
		}
		op := v.GetInt64("op")
		if q, seen := sp.opPart(op); seen {
			p = q // a second invoke of an op: its loader says so
		} else {
			sp.setOp(op, p)
			sp.open[op] = openInvoke{line: line, raw: append([]byte(nil), raw...)}
		}
		return sp.keys[p].write(line, raw)
	case TypeOK, TypeInfo, TypeFail:
		op := v.GetInt64("op")
		p, _ := sp.opPart(op) // an unknown op goes to 0, whose loader says so
		if typ == TypeOK {
			status := v.GetInt("resp", "status")
			sp.s.Answers++
			if status >= 500 {
				sp.s.Failures++
			}
			if status >= 200 && status < 300 {
				sp.s.Successes = append(sp.s.Successes, v.GetInt64("ns"))
			}
			if inv, ok := sp.open[op]; ok {
				if rv := v.Get("resp"); rv != nil {
					if b, err := body(rv); err == nil && len(b) > 0 {
						w := sp.bodies[sp.part(b)]
						if err := w.write(inv.line, inv.raw); err != nil {
							return err
						}
						if err := w.write(line, raw); err != nil {
							return err
						}
					}
				}
			}
		}
		delete(sp.open, op)
		return sp.keys[p].write(line, raw)
	case TypeEffect:
		sp.s.EffectsKnown = true
		p := sp.part(v.GetStringBytes("key"))
		if in := v.GetStringBytes("intent"); len(in) > 0 {
			ih := maphash.Bytes(splitSeed, in)
			if q, ok := sp.intents[ih]; ok {
				p = q
			} else if _, ok := sp.early[ih]; !ok {
				sp.early[ih] = p
			}
		}
		return sp.keys[p].write(line, raw)
	case TypeInterrupted:
		sp.s.Interrupted = string(v.GetStringBytes("error"))
		if sp.s.Interrupted == "" {
			sp.s.Interrupted = "interrupted"
		}
	case TypeMeta, TypeFault:
	default:
		if v.Get("type") == nil || v.Get("type").Type() != fastjson.TypeString {
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
	f, lf   *os.File
	w, lw   *bufio.Writer
	scratch [8]byte
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
	return errors.Join(err, w.f.Close(), w.lf.Close())
}
