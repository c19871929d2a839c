package history

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// appendString writes what encoding/json
// reads back as the string itself, for valid UTF-8 of every kind of byte;
// invalid bytes become U+FFFD. Random strings built from the bytes that
// matter: controls, quote, backslash, plain ASCII, multi-byte runes, stray
// continuation bytes.
func TestAppendString_MatchesJSON(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", "Z", "0", " ", "~", "\x7f", "\x00", "\x1f", "\n", "\r", "\t", `"`, `\`, "/", "<", "é", "€", "𝄞",
		"\x80", "\xff", "\xc3", strings.Repeat("x", 9)}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := rng.IntN(40); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		var got string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if !utf8.ValidString(s) {
			// Each invalid byte is replaced on its own.
			var w strings.Builder
			for i := 0; i < len(s); {
				r, size := utf8.DecodeRuneInString(s[i:])
				w.WriteRune(r)
				i += size
			}
			want = w.String()
		}
		if got != want {
			t.Fatalf("%q encoded as %s, read back %q", s, appendString(nil, s), got)
		}
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	body := []byte(`{"id":"ord_0123456789","tenant":"t1","sku":"A-100","qty":2,"amount":1200,"state":"pending","note":"` + strings.Repeat("x", 50) + `"}`)
	inv := &Event{Type: TypeInvoke, Op: 123456, Intent: "i123456", Tenant: "t1", Key: "bench-i123456", Attempt: 1, NS: 1234567890,
		Req: &Request{Method: "POST", Path: "/v1/orders", Headers: Headers{{"Authorization", "[redacted]"}, {"Content-Type", "application/json"},
			{"Idempotency-Key", "bench-i123456"}}, Body: []byte(`{"sku":"A-100","qty":2,"amount":1200}`)}}
	ok := &Event{Type: TypeOK, Op: 123456, NS: 1234567990, Resp: &Response{Status: 201, Headers: Headers{{"Content-Length", "150"},
		{"Content-Type", "application/json"}, {"Date", "Mon, 30 Nov 2026 09:00:00 GMT"}}, Body: body}}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEvent(buf[:0], inv)
		buf = AppendEvent(buf[:0], ok)
	}
}
