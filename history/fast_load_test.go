package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/internal/histgen"
)

func assertSameLoad(t *testing.T, data []byte, keep []string) {
	t.Helper()
	want, werr := history.LoadByEvents(bytes.NewReader(data), keep)
	got, gerr := history.Load(bytes.NewReader(data), history.LoadOptions{KeepHeaders: keep})
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("errors differ: direct %v, by events %v", gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("histories differ:\ndirect    %+v\nby events %+v", got, want)
	}
	assertSameBlocks(t, data, history.LoadOptions{KeepHeaders: keep}, want, werr)
}

// assertSameBlocks checks that the serial loop and the parallel one, with
// blocks from smaller than a line (a line grown past its limit goes to the
// serial loop) to larger than the input, load data exactly as want and
// werr say.
func assertSameBlocks(t *testing.T, data []byte, opts history.LoadOptions, want *history.History, werr error) {
	t.Helper()
	for _, c := range []struct{ workers, block int }{{1, 0}, {2, 1}, {2, 7}, {3, 64}, {2, 300}, {2, 4096}, {4, 1 << 20}} {
		got, gerr := history.LoadBlocks(bytes.NewReader(data), opts, c.workers, c.block)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("workers %d, blocks of %d bytes: errors differ: %v, by events %v", c.workers, c.block, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("workers %d, blocks of %d bytes: histories differ:\n%+v\nby events %+v", c.workers, c.block, got, want)
		}
	}
}

func TestLoad_DirectPathMatchesEvents(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../testdata/histories/*/*.jsonl")
	cases := map[string][]byte{
		"generated": histgen.Generate(histgen.Default(5000)),
		// Large enough for Load to guess its attempts and effects from a
		// bytes.Reader's length and lay them out at once.
		"generated 20k": histgen.Generate(histgen.Default(20000)),
		"odd ops":       []byte(meta + `{"type":"invoke","op":-3,"ns":1}` + "\n" + `{"type":"invoke","op":9000000000,"ns":2,"req":{}}` + "\n" + `{"type":"ok","op":-3,"ns":3,"resp":{"status":204}}` + "\n" + `{"type":"info","op":9000000000,"ns":4}` + "\n"),
		"escapes":       []byte(meta + `{"type":"invoke","\u006fp":1,"ns":1,"req":{"method":"P\u004fST","headers":{"A":"\u00e9"},"body":"\u0000\n"}}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"content-TYPE":"x","Location":"\u002f"},"body_b64":"/w=="}}` + "\n"),
		// Strings past the scanner's plain loop: escapes before, at and
		// after its end, an escaped backslash before a quote.
		"long strings": []byte(meta + `{"type":"invoke","op":1,"ns":1,"key":"0123456789012345678901234567890123456789","req":{"path":"/0123456789012345678901234567890\"x","body":"{\"a\":\"0123456789012345678901234567890123456789\\\\\",\"b\":\"\u00e9\"}"}}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"Location":"/01234567890123456789012345678901234567\\\\"},"body":"0123456789012345678901234567890123456789\\n\""}}` + "\n"),
		// A request object on a completion line, after the response: its
		// headers are not the response's.
		// A client run's fields: the listener, the proxy's answers, the
		// delay asked for, invocations and beliefs (the reference path).
		"client": []byte(`{"type":"meta","v":1,"mode":"client","client_contract":{"budget":5,"retry_statuses":[429,503],"jitter":"required"}}` + "\n" +
			`{"type":"invocation","intent":"i-1","tenant":"t1","ns":1,"action":"start","body":"{\"sku\":1}"}` + "\n" +
			`{"type":"invoke","op":1,"intent":"i-1","tenant":"t1","key":"k","listener":"127.0.0.1:4000","attempt":1,"ns":2,"req":{"method":"POST","path":"/o","body":"{\"sku\":1}"}}` + "\n" +
			`{"type":"ok","op":1,"ns":3,"resp":{"status":429},"by":"proxy","forwarded":false,"retry_after_ms":1000}` + "\n" +
			`{"type":"invoke","op":2,"intent":"i-1","tenant":"t1","key":"k","listener":"127.0.0.1:4000","attempt":2,"ns":4}` + "\n" +
			`{"type":"info","op":2,"ns":5,"by":"proxy","forwarded":true,"error":"reset"}` + "\n" +
			`{"type":"invoke","op":3,"intent":"i-1","listener":"127.0.0.1:\u0034000","ns":6}` + "\n" +
			`{"type":"ok","op":3,"ns":7,"by":"pro\u0078y","forwarded":null,"retry_after_ms":null,"resp":{"status":201}}` + "\n" +
			`{"type":"invoke","op":4,"intent":"i-1","ns":8}` + "\n" +
			`{"type":"fail","op":4,"ns":9,"by":"upstream","forwarded":false}` + "\n" +
			`{"type":"belief","intent":"i-1","ns":10,"belief":"success","exit":0,"resource":"ord_1"}` + "\n"),
		"bad forwarded":        []byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"fail","op":1,"ns":2,"by":"proxy","forwarded":1}` + "\n"),
		"negative retry after": []byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":429},"retry_after_ms":-1}` + "\n"),
		"req after resp":       []byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"Content-Type":"a"}},"req":{"headers":{"Content-Type":"b"}},"resp":{"headers":{"Content-Type":"c"}}}` + "\n"),
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = b
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assertSameLoad(t, data, nil)
			assertSameLoad(t, data, []string{"Content-Type", "content-type", "Idempotent-Replayed"})
		})
	}
}

func FuzzLoad_DirectPathMatchesEvents(f *testing.F) {
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1,"req":{"method":"POST","path":"/","headers":{"A":"b"},"body":"x"}}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"Content-Type":"a"},"body_b64":"/w=="}}` + "\n"))
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1,"req":null}` + "\n"))
	f.Add([]byte(meta + `{"type":"ok","op":1,"ns":1,"resp":{"status":42}}` + "\n"))
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"fail","op":1,"ns":2,"error":3}` + "\n"))
	f.Add([]byte(meta + `{"type":"effect","effect":"","kind":null,"ns":1.5}` + "\n" + `{"type":"effect","effect":"order 1","tenant":"t"}` + "\n"))
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1,"req":{"headers":{"A":1}}}` + "\n"))
	f.Add([]byte(meta + ` {"type" : "invoke" ,"op":1,"op":2,"ns":-0,"x":[1,{"a":[]},"s",true,null,-1.5e+3],"req":{"body":"\ud83d\ude00 \u00e9\/\b\f\r\t\"","body":"dup"}}` + "\r\n"))
	f.Add([]byte(meta + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"Location":"\u002Fx","location":"y"},"body":null,"body_b64":"AA=="}}` + "\n" + `{"type":"ok","op":1,"ns":01,"resp":{"status":200}}`))
	f.Add([]byte(meta + `{"type":"effect","effect":"order\u0020 1","kind":"\ud800","ns":3}` + "\n" + `{"type":"eff\u0065ct","effect":"x"}` + "\n" + `{"type":"info","op":1,"ns":1e3}`))
	// The ambiguous lines both decoders refuse (strict.go).
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"ok","op":1,"\u006fp":2,"ns":2,"resp":{"status":201,"status":500}}` + "\n"))
	f.Add([]byte(meta + "{\"type\":\"invoke\",\"op\":1,\"ns\":1,\"key\":\"a\x01\xff\"}\n"))
	f.Add([]byte(meta + `{"type":"invoke","op":-01,"ns":1}` + "\n"))
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1,"listener":"l"}` + "\n" + `{"type":"ok","op":1,"ns":2,"by":"proxy","forwarded":true,"retry_after_ms":5,"resp":{"status":503}}` + "\n" + `{"type":"belief","intent":"i","belief":"unknown","exit":75}` + "\n"))
	// A client run's invocation and belief lines, and the ways they go wrong.
	f.Add([]byte(meta + `{"type":"invocation","intent":"i1","tenant":"t1","ns":1,"action":"create","body":"{\"qty\": 1}"}` + "\n" +
		`{"type":"invocation","intent":"i2","ns":2,"body_b64":"/w==","error":null}` + "\n" +
		`{"type":"belief","intent":"i1","ns":9,"belief":"success","exit":0,"resource":"ord_1"}` + "\n" +
		`{"type":"belief","intent":"i2","ns":10,"belief":"unknown","exit":75,"error":"killed at timeout 30s","tenant":7}` + "\n"))
	f.Add([]byte(meta + `{"type":"belief","intent":"i1","belief":"maybe"}` + "\n"))
	f.Add([]byte(meta + `{"type":"belief","intent":"","belief":"success"}` + "\n" + `{"type":"belief","intent":"i","belief":"failure","exit":"1"}` + "\n"))
	f.Add([]byte(meta + `{"type":"belief","intent":"i","belief":"failure","resource":3}` + "\n" + `{"type":"invocation","intent":"i","action":1}` + "\n"))
	f.Add([]byte(meta + `{"type":"invocation","intent":"i","body":5}` + "\n" + `{"type":"invocation","intent":"i","body_b64":"%%"}` + "\n" +
		`{"type":"invocation","intent":"i","body":"a","body_b64":"/w=="}` + "\n" + `{"type":"invocation","intent":"i","body":null,"body_b64":"/w=="}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		assertSameLoad(t, data, nil)
	})
}

// TestLoad_ParallelMatchesSerial covers what only the line splitting of the
// parallel load can get wrong: a byte order mark, blank and CRLF lines,
// an unfinished last line, the line number of an error far into the input,
// a read error, and a header KeepHeader keeps whose value the scanner
// cannot read.
func TestLoad_ParallelMatchesSerial(t *testing.T) {
	t.Parallel()
	gen := histgen.Generate(histgen.Default(3000))
	inv := func(op int) string {
		return `{"type":"invoke","op":` + strconv.Itoa(op) + `,"ns":1,"key":"k","req":{"method":"POST","path":"/o","body":"{}"}}` + "\n"
	}
	cases := map[string]string{
		"bom and blank lines":                "\ufeff" + meta + "\n  \n" + inv(1) + "\r\n\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":201,"body":"x"}}` + "\r\n \n",
		"unfinished last line":               string(gen) + `{"type":"ok","op":`,
		"complete last line without newline": meta + inv(1) + `{"type":"info","op":1,"ns":5}`,
		"late duplicate op":                  string(gen) + inv(1),
		"late bad line":                      string(gen) + "{\n",
		"bad header value":                   meta + inv(1) + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"X-A":"\ud800","X-B":"b"}}}` + "\n",
		"only blank lines":                   "\n \n\r\n",
	}
	keepAll := func(string) bool { return true }
	keepB := func(name string) bool { return name == "X-B" }
	for name, in := range cases {
		for _, fn := range []func(string) bool{nil, keepAll, keepB} {
			want, werr := history.LoadByEventsWith(strings.NewReader(in), nil, fn)
			assertSameBlocks(t, []byte(in), history.LoadOptions{KeepHeader: fn}, want, werr)
			if name == "late duplicate op" && (werr == nil || !strings.Contains(werr.Error(), "invoked twice")) {
				t.Fatalf("%s: want a duplicate op error, got %v", name, werr)
			}
		}
	}
	// A read error: the lines before it are loaded (and may already be
	// wrong), then the error is returned, as the serial reader does.
	boom := errors.New("boom")
	for _, c := range []struct{ workers, block int }{{1, 0}, {2, 64}, {2, 4096}} {
		_, err := history.LoadBlocks(io.MultiReader(bytes.NewReader(gen[:len(gen)/2]), iotest.ErrReader(boom)), history.LoadOptions{}, c.workers, c.block)
		if !errors.Is(err, boom) {
			t.Fatalf("workers %d, blocks of %d: want the read error, got %v", c.workers, c.block, err)
		}
	}
}

// One rule for both decoders (issue #22): what the format promises stays
// lenient (unknown fields, any field order); what two readers could read
// two ways is refused at its line by the fast loader, the parallel one and
// the reference reader alike. On main the fast path and the reference
// reader took different values of a duplicated key, and all of them
// accepted "op":01, raw control bytes and invalid UTF-8 in strings.
func TestLoad_AmbiguousLinesRefusedByBoth(t *testing.T) {
	t.Parallel()
	inv := `{"type":"invoke","op":1,"ns":1,"key":"k","req":{"method":"POST","path":"/o","body":"{}"}}` + "\n"
	for name, c := range map[string]struct{ line, want string }{
		"duplicated op":         {`{"type":"ok","op":1,"op":2,"ns":2,"resp":{"status":201}}`, `line 3: the key "op" twice in one object`},
		"duplicated, escaped":   {`{"type":"ok","op":1,"\u006fp":2,"ns":2,"resp":{"status":201}}`, `line 3: the key "op" twice`},
		"duplicated status":     {`{"type":"ok","op":1,"ns":2,"resp":{"status":201,"status":500}}`, `the key "status" twice`},
		"duplicated type":       {`{"type":"ok","op":1,"type":"info","ns":2,"resp":{"status":201}}`, `the key "type" twice`},
		"leading zero":          {`{"type":"ok","op":01,"ns":2,"resp":{"status":201}}`, "line 3: the number 01 with a leading zero"},
		"negative leading 0":    {`{"type":"ok","op":1,"ns":-02,"resp":{"status":201}}`, "the number -02 with a leading zero"},
		"raw control byte":      {"{\"type\":\"ok\",\"op\":1,\"ns\":2,\"resp\":{\"status\":201,\"body\":\"a\x01b\"}}", "line 3: a raw control byte (0x01) inside a string"},
		"raw tab in a string":   {"{\"type\":\"ok\",\"op\":1,\"ns\":2,\"resp\":{\"status\":201,\"body\":\"a\tb\"}}", "a raw control byte (0x09)"},
		"invalid UTF-8":         {"{\"type\":\"ok\",\"op\":1,\"ns\":2,\"resp\":{\"status\":201,\"body\":\"a\xffb\"}}", "line 3: bytes that are not UTF-8 inside a string"},
		"duplicated, nested":    {`{"type":"ok","op":1,"ns":2,"x":[{"a":1,"b":{},"a":2}],"resp":{"status":201}}`, `the key "a" twice`},
		"duplicated header":     {`{"type":"ok","op":1,"ns":2,"resp":{"status":201,"headers":{"Location":"/a","Location":"/b"}}}`, `the key "Location" twice`},
		"duplicated, many keys": {`{"type":"ok","op":1,"ns":2,"resp":{"status":201},"x":{` + manyKeys(70) + `,"k3":0}}`, `the key "k3" twice`},
		"invalid UTF-8 in key":  {"{\"type\":\"ok\",\"op\":1,\"ns\":2,\"x\xc3\":1,\"resp\":{\"status\":201}}", "bytes that are not UTF-8"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := []byte(meta + inv + c.line + "\n")
			_, werr := history.LoadByEvents(bytes.NewReader(data), nil)
			if werr == nil || !strings.Contains(werr.Error(), c.want) || !errors.Is(werr, history.ErrAmbiguous) {
				t.Fatalf("reference reader: %v, want %q", werr, c.want)
			}
			assertSameLoad(t, data, nil)
		})
	}
	// Lenient where the README promises: unknown fields anywhere, any
	// order, the same key in two objects, 0 and -0 and 0.5, escapes.
	ok := meta + `{"ns":1,"req":{"body":"{}","path":"/o","method":"POST","x":{"op":3}},"key":"k","op":1,"type":"invoke","future":[0,-0,0.5,1e3]}` + "\n" +
		`{"resp":{"status":201,"headers":{"X-A":"\u0001 \t"}},"op":1,"type":"ok","ns":2,"extra":{"type":"x"}}` + "\n"
	for _, load := range []func() (*history.History, error){
		func() (*history.History, error) { return history.LoadByEvents(strings.NewReader(ok), nil) },
		func() (*history.History, error) { return history.Load(strings.NewReader(ok), history.LoadOptions{}) },
	} {
		if h, err := load(); err != nil || len(h.Attempts) != 1 {
			t.Fatalf("lenient history refused: %v", err)
		}
	}
	assertSameLoad(t, []byte(ok), nil)
}

// manyKeys is n members "k0":0 … of one object, past what the fast path
// tracks of an object's keys.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":0`, i)
	}
	return b.String()
}
