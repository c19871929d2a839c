package history

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf8"
)

// scanner reads the fields of one history line straight from its bytes, for
// [Load]'s direct path. It understands a strict subset of what the JSON
// parser accepts (keys without escapes, integers without exponent, the
// common string escapes) and reports ok=false for anything else, so that
// the line goes through the parser and the reference decoder instead, which
// either produce the same result or the error. It never builds a tree and
// never copies a string without escapes.
type scanner struct {
	line []byte
	esc  []byte // unescaped strings of the current line
}

// tok is one value of the line: its kind and where it lies. For a string,
// start and end bound its content, without the quotes, and esc says
// whether the content has a backslash.
type tok struct {
	kind       byte // 0 absent, '"' string, 'n' number, '{' object, '[' array, 'l' true, false or null
	null       bool
	esc        bool
	start, end int
}

const maxScanDepth = 64

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func (s *scanner) ws(i int) int {
	for i < len(s.line) && isWS(s.line[i]) {
		i++
	}
	return i
}

// str scans the string that opens at i; it returns the index after it.
// Unescaping is left to [scanner.text], which is only asked for the strings
// a History keeps.
func (s *scanner) str(i int) (tok, int, bool) {
	t := tok{kind: '"', start: i + 1}
	line := s.line
	// Keys and most values are short: a plain loop beats a search call.
	// It steps over each escape, so a JSON body held as a string (an
	// escape at every quote) is one pass too.
	j, found := stepString(line, t.start, min(len(line), t.start+shortStr), &t.esc)
	if found {
		t.end = j
		return t, j + 1, true
	}
	if !t.esc && j < len(line) {
		q := bytes.IndexByte(line[j:], '"')
		if q < 0 {
			return t, 0, false
		}
		if j += q; line[j-1] != '\\' {
			t.end = j
			t.esc = bytes.IndexByte(line[t.start:j], '\\') >= 0
			return t, j + 1, true
		}
		j = t.start // an escaped quote: the plain loop again
	}
	if j, found = stepString(line, j, len(line), &t.esc); found {
		t.end = j
		return t, j + 1, true
	}
	return t, 0, false
}

// stepString walks line[j:n] inside a string, stepping over each escape
// (and noting it in esc): it returns the closing quote's index and true,
// or where it stopped and false.
func stepString(line []byte, j, n int, esc *bool) (int, bool) {
	for ; j < n; j++ {
		switch line[j] {
		case '\\':
			*esc = true
			j++
		case '"':
			return j, true
		}
	}
	return j, false
}

// strText scans the string that opens at i as [scanner.str] does and
// returns its content unescaped as [scanner.text] would, in one pass:
// textOK is false for an escape text leaves to the parser.
func (s *scanner) strText(i int) (t tok, text []byte, textOK bool, end int, ok bool) {
	line := s.line
	t = tok{kind: '"', start: i + 1}
	j := t.start
	for j < len(line) && line[j] != '"' && line[j] != '\\' {
		j++
	}
	if j >= len(line) {
		return t, nil, false, 0, false
	}
	if line[j] == '"' {
		t.end = j
		return t, line[t.start:j], true, j + 1, true
	}
	t.esc = true
	// Unescaping never lengthens a string: the rest of the line is room
	// enough, written by index (runs between escapes are short).
	start := len(s.esc)
	s.esc = slices.Grow(s.esc, len(line)-t.start)
	out := s.esc[start : start+len(line)-t.start]
	w := copy(out, line[t.start:j])
	textOK = true
	for j < len(line) {
		c := line[j]
		if c != '"' && c != '\\' {
			out[w] = c
			w++
			j++
			continue
		}
		if c == '"' {
			t.end = j
			if !textOK {
				return t, nil, false, j + 1, true
			}
			s.esc = s.esc[:start+w]
			return t, out[:w:w], true, j + 1, true
		}
		if j+1 >= len(line) {
			return t, nil, false, 0, false
		}
		if textOK {
			var r rune
			var n int
			if r, n, textOK = decodeEscape(line[j:]); textOK {
				if r < utf8.RuneSelf {
					out[w] = byte(r)
					w++
				} else {
					w += utf8.EncodeRune(out[w:], r)
				}
				j += n
				continue
			}
		}
		j += 2 // the escaped byte cannot end the string
	}
	return t, nil, false, 0, false
}

// decodeEscape returns what the escape at the start of esc stands for and
// how many bytes it took; ok is false for one [scanner.text] leaves to the
// parser.
func decodeEscape(esc []byte) (r rune, n int, ok bool) {
	switch c := esc[1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		if len(esc) < 6 {
			return 0, 0, false
		}
		for _, h := range esc[2:6] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return 0, 0, false
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			return 0, 0, false // a surrogate: the parser pairs them
		}
		return r, 6, true
	}
	return 0, 0, false
}

// shortStr is how far str looks with a plain loop before it searches.
const shortStr = 32

// value scans the value at i (after white space) and returns the index
// after it.
func (s *scanner) value(i, depth int) (tok, int, bool) {
	if i >= len(s.line) || depth > maxScanDepth {
		return tok{}, 0, false
	}
	switch c := s.line[i]; {
	case c == '"':
		return s.str(i)
	case c == '{':
		end, ok := s.members(i, depth+1, nil)
		return tok{kind: '{', start: i, end: end}, end, ok
	case c == '[':
		j := s.ws(i + 1)
		if j < len(s.line) && s.line[j] == ']' {
			return tok{kind: '[', start: i, end: j + 1}, j + 1, true
		}
		for {
			_, j2, ok := s.value(j, depth+1)
			if !ok {
				return tok{}, 0, false
			}
			j = s.ws(j2)
			if j >= len(s.line) {
				return tok{}, 0, false
			}
			if s.line[j] == ']' {
				return tok{kind: '[', start: i, end: j + 1}, j + 1, true
			}
			if s.line[j] != ',' {
				return tok{}, 0, false
			}
			j = s.ws(j + 1)
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if end := i + len(lit); end <= len(s.line) && string(s.line[i:end]) == lit {
				return tok{kind: 'l', null: lit == "null", start: i, end: end}, end, true
			}
		}
		return tok{}, 0, false
	case c == '-' || (c >= '0' && c <= '9'):
		j := i
		if c == '-' {
			j++
		}
		if j+1 < len(s.line) && s.line[j] == '0' && s.line[j+1] >= '0' && s.line[j+1] <= '9' {
			return tok{}, 0, false // a leading zero: strict.go's rule, said by the parser's path
		}
		for j < len(s.line) && (s.line[j] >= '0' && s.line[j] <= '9' || s.line[j] == '.' || s.line[j] == '-' || s.line[j] == 'e' || s.line[j] == 'E' || s.line[j] == '+') {
			j++
		}
		return tok{kind: 'n', start: i, end: j}, j, true
	}
	return tok{}, 0, false
}

// members scans the object that opens at i and returns the index after it.
// When f is nil, member values are scanned by value; otherwise f scans each
// value itself (it is called with the key and the index of the value's first
// byte) and returns the index after it, which lets a caller read nested
// objects in the same pass. A key with an escape, or f reporting ok=false,
// ends the scan with ok=false.
func (s *scanner) members(i, depth int, f func(key []byte, at int) (int, bool)) (int, bool) {
	if depth > maxScanDepth {
		return 0, false
	}
	j := s.ws(i + 1)
	if j < len(s.line) && s.line[j] == '}' {
		return j + 1, true
	}
	var keys objectKeys
	for {
		if j >= len(s.line) || s.line[j] != '"' {
			return 0, false
		}
		// Keys are short and plain: read in place. A key with an escape
		// is left to the parser.
		k0, k1 := j+1, j+1
		for k1 < len(s.line) && s.line[k1] != '"' && s.line[k1] != '\\' {
			k1++
		}
		if k1 >= len(s.line) || s.line[k1] != '"' {
			return 0, false
		}
		if !keys.add(s.line, k0, k1) {
			return 0, false // a key twice (or very many): strict.go's rule, said by the parser's path
		}
		j = s.ws(k1 + 1)
		if j >= len(s.line) || s.line[j] != ':' {
			return 0, false
		}
		var j3 int
		var ok bool
		if f == nil {
			_, j3, ok = s.value(s.ws(j+1), depth)
		} else {
			j3, ok = f(s.line[k0:k1], s.ws(j+1))
		}
		if !ok {
			return 0, false
		}
		j = s.ws(j3)
		if j >= len(s.line) {
			return 0, false
		}
		if s.line[j] == '}' {
			return j + 1, true
		}
		if s.line[j] != ',' {
			return 0, false
		}
		j = s.ws(j + 1)
	}
}

// objectKeys are the keys one object has shown so far, to refuse a key
// twice (strict.go) in the pass that reads them: a 64-bit filter on each
// key's length and end bytes, the keys compared only when it hits.
type objectKeys struct {
	filter uint64
	n      int
	at     [maxObjectKeys][2]int32
}

// maxObjectKeys is the most keys of one object the fast path reads; an
// object with more goes to the parser's path.
const maxObjectKeys = 64

// add notes the key line[k0:k1]; false when the object had it already or
// has too many keys to track.
func (o *objectKeys) add(line []byte, k0, k1 int) bool {
	h := uint(k1 - k0)
	if k1 > k0 {
		h = h*31 + uint(line[k0])*7 + uint(line[k1-1])
	}
	bit := uint64(1) << (h & 63)
	if o.filter&bit != 0 {
		key := line[k0:k1]
		for _, p := range o.at[:o.n] {
			if bytes.Equal(line[p[0]:p[1]], key) {
				return false
			}
		}
	}
	if o.n == maxObjectKeys {
		return false
	}
	o.filter |= bit
	o.at[o.n] = [2]int32{int32(k0), int32(k1)}
	o.n++
	return true
}

// plainText reports whether line has no byte below 0x20 and is valid
// UTF-8: what strict.go asks of every string, checked for the whole line
// at once, eight bytes a step (a quote never sits inside a multi-byte
// sequence, so each string of a valid line is valid). The scanner reads
// no raw control byte outside a string either. A line that fails goes to
// the parser's path, which names the byte.
func plainText(line []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var high uint64
	i := 0
	for ; i+8 <= len(line); i += 8 {
		x := binary.LittleEndian.Uint64(line[i:])
		if (x-0x20*ones)&^x&highs != 0 { // some byte below 0x20
			return false
		}
		high |= x & highs
	}
	for ; i < len(line); i++ {
		if line[i] < 0x20 {
			return false
		}
		high |= uint64(line[i] & 0x80)
	}
	return high == 0 || utf8.Valid(line)
}

// text returns the content of a string token, unescaped. ok is false for an
// escape this scanner leaves to the parser (a surrogate, an unknown or
// malformed escape).
func (s *scanner) text(t tok) ([]byte, bool) {
	raw := s.line[t.start:t.end]
	if !t.esc {
		return raw, true
	}
	// Unescaping never lengthens a string (a \u escape of 6 bytes is at
	// most 3 of UTF-8, surrogates aside), so the bytes are written straight
	// into room made for all of raw. Runs between escapes are short in JSON
	// bodies: a byte loop beats a copy call per run.
	start := len(s.esc)
	s.esc = slices.Grow(s.esc, len(raw))
	out := s.esc[start : start+len(raw)]
	w := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out[w] = c
			w++
			continue
		}
		if i+1 >= len(raw) {
			return nil, false
		}
		r, n, ok := decodeEscape(raw[i:])
		if !ok {
			return nil, false
		}
		if r < utf8.RuneSelf {
			out[w] = byte(r)
			w++
		} else {
			w += utf8.EncodeRune(out[w:], r)
		}
		i += n - 1
	}
	s.esc = s.esc[:start+w]
	return out[:w:w], true
}

// optStr reads an optional string field: absent or null is empty.
func (s *scanner) optStr(t tok) ([]byte, bool) {
	switch {
	case t.kind == 0 || t.null:
		return nil, true
	case t.kind == '"':
		return s.text(t)
	}
	return nil, false
}

// reqInt reads a required integer field.
func (s *scanner) reqInt(t tok) (int64, bool) {
	if t.kind != 'n' {
		return 0, false
	}
	b := s.line[t.start:t.end]
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// optInt reads an optional integer field: absent or null is 0.
func (s *scanner) optInt(t tok) (int64, bool) {
	if t.kind == 0 || t.null {
		return 0, true
	}
	return s.reqInt(t)
}

// optBool reads an optional boolean field: absent or null is false.
func (s *scanner) optBool(t tok) (bool, bool) {
	switch {
	case t.kind == 0 || t.null:
		return false, true
	case t.kind == 'l':
		return s.line[t.start] == 't', true
	}
	return false, false
}
