package history

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The one rule of both decoders — the fast loader (fast_*.go) and the
// reference reader (reader.go) — on what a line may hold beyond what they
// read. What the format promises stays lenient: unknown fields, any field
// order, blank lines. What is ambiguous is refused at file:line by both,
// because the two would otherwise read different events from it (the
// fast scanner and the parser each pick a duplicated key their own way),
// and a checker's verdict must not depend on which decoder ran:
//
//   - a key twice in one object ("op":1,"op":2);
//   - a number with a leading zero ("op":01, which JSON does not allow);
//   - a raw control byte inside a string (JSON wants it escaped);
//   - bytes that are not UTF-8 inside a string.
//
// A truncated or otherwise malformed line is the parser's to report: this
// check says nothing about structure. strictLine runs on the parser's path
// only: the fast scanner refuses, in the pass that reads the line, every
// line this rule could refuse (plainText, objectKeys, a leading zero in
// scanner.value), and such a line goes to the parser's path, where
// strictLine names what is wrong.

// strictDepth bounds the objects the check tracks; deeper lines are
// refused by the parser (fastjson.MaxDepth is 300) or hold no event field.
const strictDepth = 64

// manyKeys is where an object's keys move from a list to a set, so that
// a line of 100k keys costs no more than its length.
const manyKeys = 16

type strictFrame struct {
	object   bool
	expect   bool // an object expecting a key (after "{" or ",")
	first    int  // index in keys of this object's first key
	set      map[string]struct{}
	overflow bool // deeper than strictDepth: keys not tracked
}

// strictLine checks line against the rule above and returns "" or what is
// wrong, with the byte offset it is at.
func strictLine(line []byte) string {
	var (
		stackBuf [16]strictFrame
		stack    = stackBuf[:0]
		keysBuf  [32][]byte
		keys     = keysBuf[:0]
		depth    int // may exceed len(stack) past strictDepth
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '"':
			start := i + 1
			escaped := false
			j := start
			for ; j < len(line); j++ {
				b := line[j]
				if b == '\\' {
					escaped = true
					j++
					continue
				}
				if b == '"' {
					break
				}
				if b < 0x20 {
					return fmt.Sprintf("a raw control byte (0x%02x) inside a string at byte %d (JSON writes it escaped, \\u%04x)", b, j+1, b)
				}
			}
			if j >= len(line) {
				return "" // unterminated: the parser's to say
			}
			s := line[start:j]
			if !utf8.Valid(s) {
				k := start
				for k < j {
					r, n := utf8.DecodeRune(line[k:j])
					if r == utf8.RuneError && n <= 1 {
						break
					}
					k += n
				}
				return fmt.Sprintf("bytes that are not UTF-8 inside a string at byte %d", k+1)
			}
			if depth > 0 && depth <= strictDepth {
				f := &stack[len(stack)-1]
				if f.object && f.expect {
					f.expect = false
					key := s
					if escaped {
						key = unescapeKey(s)
					}
					if dupKey(f, keys, key) {
						return fmt.Sprintf("the key %s twice in one object (byte %d): which one is meant is ambiguous", strconv.Quote(string(key)), start)
					}
					keys = append(keys, key)
				}
			}
			i = j
		case c == '{' || c == '[':
			depth++
			if depth <= strictDepth {
				stack = append(stack, strictFrame{object: c == '{', expect: c == '{', first: len(keys)})
			}
		case c == '}' || c == ']':
			if depth == 0 {
				return ""
			}
			if depth <= strictDepth {
				keys = keys[:stack[len(stack)-1].first]
				stack = stack[:len(stack)-1]
			}
			depth--
		case c == ',':
			if depth > 0 && depth <= strictDepth && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			if line[j] == '-' {
				j++
			}
			if j+1 < len(line) && line[j] == '0' && line[j+1] >= '0' && line[j+1] <= '9' {
				end := j + 1
				for end < len(line) && line[end] >= '0' && line[end] <= '9' {
					end++
				}
				return fmt.Sprintf("the number %s with a leading zero at byte %d (JSON does not allow one: octal or a typo?)", line[i:end], i+1)
			}
			for j < len(line) && bytes.IndexByte([]byte("0123456789.eE+-"), line[j]) >= 0 {
				j++
			}
			i = j - 1
		}
	}
	return ""
}

// dupKey says whether key is already a key of the object f, whose keys
// from f.first on are in keys; past manyKeys it keeps them in a set.
func dupKey(f *strictFrame, keys [][]byte, key []byte) bool {
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	own := keys[f.first:]
	for _, k := range own {
		if bytes.Equal(k, key) {
			return true
		}
	}
	if len(own) >= manyKeys {
		f.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range own {
			f.set[string(k)] = struct{}{}
		}
		f.set[string(key)] = struct{}{}
	}
	return false
}

// unescapeKey is the key s (between its quotes) with its JSON escapes
// read, so that "\u006fp" and "op" are one key; s itself when it is not
// a valid string (the parser reports that).
func unescapeKey(s []byte) []byte {
	q := make([]byte, 0, len(s)+2)
	q = append(q, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '/' {
			q = append(q, '/') // JSON's \/, which Go's quoting lacks
			i++
			continue
		}
		q = append(q, s[i])
	}
	q = append(q, '"')
	u, err := strconv.Unquote(string(q))
	if err != nil {
		return s
	}
	return []byte(u)
}
