package history

import (
	"hash/maphash"

	"github.com/valyala/fastjson"
)

// canonicalizer hashes a JSON body in a canonical form: what a service
// whose fingerprint "parses the JSON" sees. Object members count whatever
// their order, whitespace does not count and strings are compared
// unescaped, but a number, a string, a boolean and null stay different
// things: "qty":1 and "qty":"1" are two payloads. Numbers keep their
// literal text (1 and 1.0 differ), as a fingerprint over re-encoded JSON
// sees them.
//
// The hash is built bottom-up: an object's members are combined with an
// addition, which does not depend on their order, so nothing is sorted or
// copied. Bodies without escapes (nearly all) are hashed in one pass over
// their bytes; the others go through the JSON parser, which unescapes, and
// are hashed by the same rules.
type canonicalizer struct {
	p fastjson.Parser
}

// Tags keep the hash of one kind of value from meeting another's.
const (
	tagObject uint64 = 0x6f626a6563740001
	tagArray  uint64 = 0x6172726179000002
	tagString uint64 = 0x737472696e670003
	tagNumber uint64 = 0x6e756d6265720004
	tagTrue   uint64 = 0x74727565000005
	tagFalse  uint64 = 0x66616c7365000006
	tagNull   uint64 = 0x6e756c6c000007
	maxDepth         = 512
)

// mix is a 64-bit finalizer (splitmix64): every input bit reaches every
// output bit, so sums of mixed values do not cancel out.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func member(k, v uint64) uint64 { return mix(k*0x9e3779b97f4a7c15 ^ v) }

func object(sum uint64, n int) uint64 { return mix(tagObject + sum + uint64(n)*0xd6e8feb86659fd93) }

func arrayStep(h, v uint64) uint64 { return mix(h*0x100000001b3 + v) }

func leaf(tag uint64, b []byte) uint64 { return mix(maphash.Bytes(hashSeed, b) ^ tag) }

// hash returns the canonical hash of body, or raw (the body's byte hash)
// when the body is not a JSON object or array: plain text is judged by its
// bytes.
func (c *canonicalizer) hash(body []byte, raw uint64) uint64 {
	i := ws(body, 0)
	if i == len(body) || (body[i] != '{' && body[i] != '[') {
		return raw
	}
	if h, end, ok := fastValue(body, i, 0); ok && ws(body, end) == len(body) {
		return h
	}
	v, err := c.p.ParseBytes(body)
	if err != nil {
		return raw
	}
	return valueHash(v)
}

// CanonicalHash returns the hash [Attempt.ReqCanon] holds for a body.
func CanonicalHash(body []byte) uint64 {
	var c canonicalizer
	return c.hash(body, Hash(body))
}

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// fastValue hashes the value at b[i:]; ok is false for anything it does
// not take on itself (an escape, bad JSON, deep nesting): the parser then
// decides.
func fastValue(b []byte, i, depth int) (h uint64, end int, ok bool) {
	i = ws(b, i)
	if i >= len(b) || depth > maxDepth {
		return 0, i, false
	}
	switch c := b[i]; {
	case c == '{':
		var sum uint64
		n := 0
		i = ws(b, i+1)
		if i < len(b) && b[i] == '}' {
			return object(0, 0), i + 1, true
		}
		for {
			i = ws(b, i)
			k, e, ok := fastString(b, i)
			if !ok {
				return 0, i, false
			}
			i = ws(b, e)
			if i >= len(b) || b[i] != ':' {
				return 0, i, false
			}
			v, e2, ok := fastValue(b, i+1, depth+1)
			if !ok {
				return 0, i, false
			}
			sum += member(leaf(tagString, k), v)
			n++
			i = ws(b, e2)
			if i >= len(b) {
				return 0, i, false
			}
			if b[i] == '}' {
				return object(sum, n), i + 1, true
			}
			if b[i] != ',' {
				return 0, i, false
			}
			i++
		}
	case c == '[':
		h := tagArray
		i = ws(b, i+1)
		if i < len(b) && b[i] == ']' {
			return mix(h), i + 1, true
		}
		for {
			v, e, ok := fastValue(b, i, depth+1)
			if !ok {
				return 0, i, false
			}
			h = arrayStep(h, v)
			i = ws(b, e)
			if i >= len(b) {
				return 0, i, false
			}
			if b[i] == ']' {
				return mix(h), i + 1, true
			}
			if b[i] != ',' {
				return 0, i, false
			}
			i++
		}
	case c == '"':
		s, e, ok := fastString(b, i)
		return leaf(tagString, s), e, ok
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []struct {
			s   string
			tag uint64
		}{{"true", tagTrue}, {"false", tagFalse}, {"null", tagNull}} {
			if len(b)-i >= len(lit.s) && string(b[i:i+len(lit.s)]) == lit.s {
				return mix(lit.tag), i + len(lit.s), true
			}
		}
		return 0, i, false
	case c == '-' || (c >= '0' && c <= '9'):
		e := i + 1
		for e < len(b) && (b[e] >= '0' && b[e] <= '9' || b[e] == '.' || b[e] == 'e' || b[e] == 'E' || b[e] == '+' || b[e] == '-') {
			e++
		}
		return leaf(tagNumber, b[i:e]), e, true
	}
	return 0, i, false
}

// fastString returns the content of the string at b[i] when it has no
// escape and no control character.
func fastString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

// valueHash hashes a parsed value by the rules of fastValue.
func valueHash(v *fastjson.Value) uint64 {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		var sum uint64
		n := 0
		o.Visit(func(k []byte, mv *fastjson.Value) {
			sum += member(leaf(tagString, k), valueHash(mv))
			n++
		})
		return object(sum, n)
	case fastjson.TypeArray:
		a, _ := v.Array()
		h := tagArray
		for _, e := range a {
			h = arrayStep(h, valueHash(e))
		}
		return mix(h)
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return leaf(tagString, b)
	case fastjson.TypeNumber:
		return leaf(tagNumber, v.MarshalTo(nil))
	case fastjson.TypeTrue:
		return mix(tagTrue)
	case fastjson.TypeFalse:
		return mix(tagFalse)
	}
	return mix(tagNull)
}
