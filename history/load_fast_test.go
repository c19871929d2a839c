package history_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
		"req after resp": []byte(meta + `{"type":"invoke","op":1,"ns":1}` + "\n" + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"headers":{"Content-Type":"a"}},"req":{"headers":{"Content-Type":"b"}},"resp":{"headers":{"Content-Type":"c"}}}` + "\n"),
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
	f.Fuzz(func(t *testing.T, data []byte) {
		assertSameLoad(t, data, nil)
	})
}
