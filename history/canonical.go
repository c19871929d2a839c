package history

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/valyala/fastjson"
)

// canonicalizer hashes a JSON body in a canonical form: what a service
// whose fingerprint "parses the JSON" sees. Object members are sorted by
// name, whitespace is gone and strings are compared unescaped, but a
// number, a string, a boolean and null stay different things: "qty":1 and
// "qty":"1" are two payloads. Numbers keep their literal text (1 and 1.0
// differ), which is what a fingerprint over re-encoded JSON sees too.
type canonicalizer struct {
	p   fastjson.Parser
	h   maphash.Hash
	buf []byte
	// ms is a stack of the members of the objects being written, reused
	// from body to body: a slice per object was most of a load's garbage.
	ms []member
}

// hash returns the canonical hash of body, or raw (the body's byte hash)
// when the body is not JSON; a body that is not an object or array keeps
// raw too, so plain text is judged by its bytes.
func (c *canonicalizer) hash(body []byte, raw uint64) uint64 {
	i := 0
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	if i == len(body) || (body[i] != '{' && body[i] != '[') {
		return raw
	}
	v, err := c.p.ParseBytes(body)
	if err != nil {
		return raw
	}
	c.h.SetSeed(hashSeed)
	c.write(v)
	return c.h.Sum64()
}

// CanonicalHash returns the hash [Attempt.ReqCanon] holds for a body.
func CanonicalHash(body []byte) uint64 {
	var c canonicalizer
	return c.hash(body, Hash(body))
}

type member struct {
	k []byte
	v *fastjson.Value
}

func (c *canonicalizer) write(v *fastjson.Value) {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		start := len(c.ms)
		o.Visit(func(k []byte, mv *fastjson.Value) { c.ms = append(c.ms, member{k, mv}) })
		end := len(c.ms)
		slices.SortStableFunc(c.ms[start:end], func(a, b member) int { return bytes.Compare(a.k, b.k) })
		c.h.WriteByte('{')
		// Nested objects push above end (and may move the stack), so the
		// members are read by index.
		for i := start; i < end; i++ {
			m := c.ms[i]
			c.str(m.k)
			c.write(m.v)
		}
		c.h.WriteByte('}')
		clear(c.ms[start:])
		c.ms = c.ms[:start]
	case fastjson.TypeArray:
		a, _ := v.Array()
		c.h.WriteByte('[')
		for _, e := range a {
			c.write(e)
		}
		c.h.WriteByte(']')
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		c.h.WriteByte('s')
		c.str(b)
	case fastjson.TypeNumber:
		c.buf = v.MarshalTo(c.buf[:0])
		c.h.WriteByte('n')
		c.str(c.buf)
	case fastjson.TypeTrue:
		c.h.WriteByte('t')
	case fastjson.TypeFalse:
		c.h.WriteByte('f')
	default:
		c.h.WriteByte('0')
	}
}

// str writes a length-prefixed string, so that no two sequences of
// strings hash alike by running into each other.
func (c *canonicalizer) str(b []byte) {
	var n [4]byte
	l := len(b)
	n[0], n[1], n[2], n[3] = byte(l), byte(l>>8), byte(l>>16), byte(l>>24)
	c.h.Write(n[:])
	c.h.Write(b)
}
