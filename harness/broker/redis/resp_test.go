package redis

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Every reply type, RESP2's and RESP3's, is read whole and its bytes kept
// exactly as they came, so that the hop forwards what the server sent.
func TestRespReader_Replies(t *testing.T) {
	cases := map[string]struct {
		in   string
		kind byte
		num  int64
		str  string
		n    int // elements
	}{
		"simple":    {"+OK\r\n", '+', 0, "OK", 0},
		"error":     {"-ERR no such key\r\n", '-', 0, "ERR no such key", 0},
		"integer":   {":3\r\n", ':', 3, "", 0},
		"bulk":      {"$5\r\nhe\r\no\r\n", '$', 0, "he\r\no", 0},
		"null bulk": {"$-1\r\n", '$', 0, "", 0},
		"array":     {"*2\r\n:1\r\n$1\r\nx\r\n", '*', 0, "", 2},
		"nested":    {"*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n", '*', 0, "", 1},
		"resp3 map": {"%1\r\n+a\r\n:1\r\n", '%', 0, "", 2},
		"set":       {"~1\r\n+a\r\n", '~', 0, "", 1},
		"null":      {"_\r\n", '_', 0, "", 0},
		"double":    {",1.5\r\n", ',', 0, "1.5", 0},
		"boolean":   {"#t\r\n", '#', 0, "t", 0},
		"verbatim":  {"=7\r\ntxt:abc\r\n", '=', 0, "txt:abc", 0},
		"blob err":  {"!3\r\nERR\r\n", '!', 0, "ERR", 0},
		"bignum":    {"(123456789012345678901234567890\r\n", '(', 0, "123456789012345678901234567890", 0},
		"push":      {">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n", '>', 0, "", 2},
		"attribute": {"|1\r\n+ttl\r\n:10\r\n:1\r\n", ':', 1, "", 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rr := newRespReader(strings.NewReader(c.in + ":42\r\n"))
			v, raw, err := rr.reply()
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != c.in {
				t.Errorf("raw = %q, want %q", raw, c.in)
			}
			if v.kind != c.kind || v.num != c.num || v.str != c.str || len(v.elems) != c.n {
				t.Errorf("value = %+v", v)
			}
			if next, _, err := rr.reply(); err != nil || next.num != 42 {
				t.Errorf("the next reply: %+v, %v", next, err)
			}
		})
	}
}

func TestRespReader_Commands(t *testing.T) {
	in := "*4\r\n$4\r\nXACK\r\n$1\r\ns\r\n$1\r\ng\r\n$3\r\n1-0\r\n" + "PING hello\r\n" + "\r\n" + "*1\r\n$4\r\nPING\r\n"
	rr := newRespReader(strings.NewReader(in))
	var got []string
	var raws string
	for {
		args, raw, err := rr.command()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(args, " "))
		raws += string(raw)
	}
	if want := []string{"XACK s g 1-0", "PING hello", "", "PING"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("commands = %q, want %q", got, want)
	}
	if raws != in {
		t.Errorf("raw bytes = %q, want the input", raws)
	}
}

func TestRespReader_Malformed(t *testing.T) {
	for name, in := range map[string]string{
		"unknown type":   "?x\r\n",
		"bad length":     "$x\r\n",
		"huge length":    "$999999999999\r\n",
		"no CRLF":        "$1\r\nxyz",
		"bad integer":    ":1.5\r\n",
		"negative count": "*-2\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := newRespReader(strings.NewReader(in)).reply()
			if err == nil {
				t.Fatalf("%q read without an error", in)
			}
		})
	}
	if _, _, err := newRespReader(strings.NewReader("*1\r\n:1\r\n")).command(); !errors.Is(err, errProtocol) {
		t.Errorf("a command of an integer: err = %v, want errProtocol", err)
	}
}
