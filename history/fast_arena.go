package history

import "unsafe"

// arena allocates the strings and header lists a loaded [History] keeps from
// a few large blocks instead of one allocation each. A million-event history
// keeps millions of short strings (keys, intents, body previews); in blocks
// the garbage collector need not scan, loading is faster and the heap
// smaller. Blocks are append-only: bytes handed out are never written again,
// which is what makes the strings immutable.
type arena struct {
	bytes   []byte
	headers []Header
	// sets shares identical kept-header lists: most responses carry the
	// same Content-Type and the same few headers, so one copy serves them.
	sets   map[string]Headers
	setKey []byte
}

// maxHeaderSets bounds the shared header lists, so that values unique to
// each response cannot grow the table without end.
const maxHeaderSets = 4096

const (
	arenaBlock   = 64 << 10
	arenaMaxSize = 1 << 10 // larger strings get their own allocation
)

// string returns b as a string backed by the arena.
func (a *arena) string(b []byte) string {
	return a.concat(b, "")
}

// concat returns b followed by suffix as one string backed by the arena.
func (a *arena) concat(b []byte, suffix string) string {
	n := len(b) + len(suffix)
	switch {
	case n == 0:
		return ""
	case n > arenaMaxSize:
		return string(b) + suffix
	case cap(a.bytes)-len(a.bytes) < n:
		a.bytes = make([]byte, 0, arenaBlock)
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	a.bytes = append(a.bytes, suffix...)
	return unsafe.String(&a.bytes[start], n)
}

// headerList returns a copy of h backed by the arena, with its capacity cut
// to its length so that an append by a caller cannot reach a neighbour.
func (a *arena) headerList(h []Header) Headers {
	if len(h) == 0 {
		return nil
	}
	a.setKey = a.setKey[:0]
	for _, f := range h {
		a.setKey = append(append(append(append(a.setKey, f.Name...), 0), f.Value...), 0)
	}
	if shared, ok := a.sets[string(a.setKey)]; ok {
		return shared
	}
	if cap(a.headers)-len(a.headers) < len(h) {
		a.headers = make([]Header, 0, max(len(h), 1024))
	}
	start := len(a.headers)
	a.headers = append(a.headers, h...)
	list := a.headers[start:len(a.headers):len(a.headers)]
	if a.sets == nil {
		a.sets = make(map[string]Headers)
	}
	if len(a.sets) < maxHeaderSets {
		a.sets[string(a.setKey)] = list
	}
	return list
}
