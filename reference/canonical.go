package reference

import (
	"bytes"
	"slices"
	"strconv"
)

// canonicalFlat is the fast path of [canonicalOrder] for the bodies clients
// actually send: one flat JSON object whose keys and string values are
// plain printable ASCII and whose values are strings or numbers. For such a
// body the canonical form (what decoding into a map and json.Marshal would
// produce) is the members sorted by key, each written back byte for byte,
// without whitespace: encoding/json re-encodes those strings unchanged and
// writes a json.Number verbatim. Anything else (escapes, HTML-escaped or
// non-ASCII bytes, nested values, literals, duplicate keys, trailing bytes,
// a field that fails validation) declines with ok == false and the caller
// takes the general path, which also produces every error: the fast path
// never rejects a body, so both paths accept and fingerprint exactly alike
// (FuzzCanonicalFlat holds them to it).
func canonicalFlat(raw []byte) (canon []byte, body orderBody, ok bool) {
	type member struct{ key, val []byte }
	var ms [8]member // bodies have three members; more declines
	n := 0
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, orderBody{}, false
	}
	i = skipSpace(raw, i+1)
	for {
		if n == len(ms) {
			return nil, orderBody{}, false
		}
		key, j, ok := plainString(raw, i)
		if !ok {
			return nil, orderBody{}, false
		}
		j = skipSpace(raw, j)
		if j >= len(raw) || raw[j] != ':' {
			return nil, orderBody{}, false
		}
		j = skipSpace(raw, j+1)
		var val []byte
		if j < len(raw) && raw[j] == '"' {
			var end int
			if _, end, ok = plainString(raw, j); !ok {
				return nil, orderBody{}, false
			}
			val, j = raw[j:end], end
		} else {
			end := j
			for end < len(raw) && (raw[end] >= '0' && raw[end] <= '9' || raw[end] == '-' || raw[end] == '+' || raw[end] == '.' || raw[end] == 'e' || raw[end] == 'E') {
				end++
			}
			if !validNumber(raw[j:end]) {
				return nil, orderBody{}, false
			}
			val, j = raw[j:end], end
		}
		ms[n] = member{key, val}
		n++
		j = skipSpace(raw, j)
		if j >= len(raw) {
			return nil, orderBody{}, false
		}
		if raw[j] == '}' {
			if skipSpace(raw, j+1) != len(raw) {
				return nil, orderBody{}, false
			}
			break
		}
		if raw[j] != ',' {
			return nil, orderBody{}, false
		}
		i = skipSpace(raw, j+1)
	}
	sorted := ms[:n]
	slices.SortFunc(sorted, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	size := 1
	var sku, qty, amount []byte
	for k, m := range sorted {
		if k > 0 && bytes.Equal(sorted[k-1].key, m.key) {
			return nil, orderBody{}, false // decoding keeps the last one: leave that to the general path
		}
		size += len(m.key) + len(m.val) + 4
		switch string(m.key) {
		case "sku":
			sku = m.val
		case "qty":
			qty = m.val
		case "amount":
			amount = m.val
		}
	}
	if len(sku) < 2 || sku[0] != '"' || len(qty) == 0 || qty[0] == '"' || len(amount) == 0 || amount[0] == '"' {
		return nil, orderBody{}, false
	}
	body.SKU = string(sku[1 : len(sku)-1])
	q, qerr := strconv.ParseInt(string(qty), 10, 64) // json.Number.Int64
	a, aerr := strconv.ParseInt(string(amount), 10, 64)
	if qerr != nil || aerr != nil || body.SKU == "" || len(body.SKU) > 64 || q < 1 || q > 1000 || a < 1 || a > 1_000_000_000 {
		return nil, orderBody{}, false
	}
	body.Qty, body.Amount = int(q), a
	canon = make([]byte, 0, size)
	canon = append(canon, '{')
	for k, m := range sorted {
		if k > 0 {
			canon = append(canon, ',')
		}
		canon = append(canon, '"')
		canon = append(canon, m.key...)
		canon = append(canon, '"', ':')
		canon = append(canon, m.val...)
	}
	canon = append(canon, '}')
	return canon, body, true
}

// skipSpace skips JSON whitespace from i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string starting at b[i] (a quote) when it is
// made only of bytes encoding/json writes back unchanged: printable ASCII
// other than the quote, the backslash and the HTML-escaped <, > and &. It
// returns the contents and the index after the closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// validNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// plainHeaders reads a stored header object ({"name":"value",…}) when every
// name and value is a plain string (see plainString) and there are at most
// 8 of them, which is what the service stores; ok == false sends the caller
// to encoding/json. Like decoding into a map, a repeated name keeps its
// last value once the pairs are applied in order.
func plainHeaders(raw []byte) (kv [8][2]string, n int, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return kv, 0, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return kv, 0, skipSpace(raw, i+1) == len(raw)
	}
	str := string(raw) // one copy: every name and value is a substring of it
	for n < len(kv) {
		k, j, ok := plainString(raw, i)
		if !ok {
			return kv, 0, false
		}
		ki := i + 1
		j = skipSpace(raw, j)
		if j >= len(raw) || raw[j] != ':' {
			return kv, 0, false
		}
		vi := skipSpace(raw, j+1)
		v, j, ok := plainString(raw, vi)
		if !ok {
			return kv, 0, false
		}
		vi++
		kv[n] = [2]string{str[ki : ki+len(k)], str[vi : vi+len(v)]}
		n++
		j = skipSpace(raw, j)
		switch {
		case j < len(raw) && raw[j] == '}':
			return kv, n, skipSpace(raw, j+1) == len(raw)
		case j < len(raw) && raw[j] == ',':
			i = skipSpace(raw, j+1)
		default:
			return kv, 0, false
		}
	}
	return kv, 0, false
}
