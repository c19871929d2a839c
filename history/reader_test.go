package history_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/idemchaos/idemchaos/history"
)

const meta = `{"type":"meta","v":1,"scenario":"s","seed":1}` + "\n"

func TestReader_ReportsLineAndCause(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		input string
		line  int
		want  string
	}{
		"not json":          {meta + "{nope\n", 2, "not valid JSON"},
		"no meta first":     {`{"type":"invoke","op":1,"ns":1}` + "\n", 1, "first event must be"},
		"future version":    {`{"type":"meta","v":2}` + "\n", 1, "version 2 is not supported"},
		"missing type":      {meta + `{"op":1}` + "\n", 2, `missing "type"`},
		"op is a string":    {meta + `{"type":"invoke","op":"1","ns":1}` + "\n", 2, `"op" must be an integer, got string`},
		"op is fractional":  {meta + `{"type":"invoke","op":1.5,"ns":1}` + "\n", 2, `"op" must be an integer, got number 1.5`},
		"ok without resp":   {meta + `{"type":"ok","op":1,"ns":1}` + "\n", 2, `needs "resp"`},
		"bad status":        {meta + `{"type":"ok","op":1,"ns":1,"resp":{"status":42}}` + "\n", 2, "HTTP status code"},
		"bad base64":        {meta + `{"type":"ok","op":1,"ns":1,"resp":{"status":200,"body_b64":"@@"}}` + "\n", 2, "not valid base64"},
		"header not string": {meta + `{"type":"ok","op":1,"ns":1,"resp":{"status":200,"headers":{"A":1}}}` + "\n", 2, `header "A" must be a string`},
		"array event":       {meta + `[1,2]` + "\n", 2, "must be a JSON object"},
		"effect without id": {meta + `{"type":"effect","tenant":"t"}` + "\n", 2, `missing "effect"`},
		"blank lines count": {meta + "\n\n" + `{"type":"fault"}` + "\n", 4, `missing "fault"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := history.NewReader(strings.NewReader(tc.input))
			var e history.Event
			var err error
			for err == nil {
				err = r.Next(&e)
			}
			var le *history.LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(le.Msg, tc.want) {
				t.Fatalf("got %q, want line %d containing %q", err, tc.line, tc.want)
			}
		})
	}
}

func TestReader_SkipsUnknownTypesAndFields(t *testing.T) {
	t.Parallel()
	in := meta + `{"type":"checkpoint","x":1}` + "\n" + `{"type":"effect","effect":"order 1","new_field":[1]}` + "\n"
	r := history.NewReader(strings.NewReader(in))
	var e history.Event
	if err := r.Next(&e); err != nil || e.Type != history.TypeMeta {
		t.Fatalf("first: %v %v", e.Type, err)
	}
	if err := r.Next(&e); err != nil || e.Type != history.TypeEffect || e.EffectKind() != "order" {
		t.Fatalf("second: %+v %v", e, err)
	}
	if r.Skipped != 1 {
		t.Fatalf("Skipped = %d, want 1", r.Skipped)
	}
	if err := r.Next(&e); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

func TestReader_TruncatedLastLine(t *testing.T) {
	t.Parallel()
	r := history.NewReader(strings.NewReader(meta + `{"type":"invoke","op":1,"n`))
	var e history.Event
	_ = r.Next(&e)
	if err := r.Next(&e); !errors.Is(err, history.ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
	// A complete last line without a newline is not truncation.
	r = history.NewReader(strings.NewReader(meta + `{"type":"fault","fault":"crash","ns":3}`))
	_ = r.Next(&e)
	if err := r.Next(&e); err != nil || e.Fault != "crash" {
		t.Fatalf("got %v %+v", err, e)
	}
}

func TestReader_LongLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	in := meta + `{"type":"effect","effect":"` + big + `"}` + "\n"
	r := history.NewReader(strings.NewReader(in))
	var e history.Event
	_ = r.Next(&e)
	if err := r.Next(&e); err != nil || len(e.Effect) != len(big) {
		t.Fatalf("got %v, len %d", err, len(e.Effect))
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(meta + `{"type":"invoke","op":1,"ns":1,"req":{"method":"POST","path":"/","headers":{"A":"b"},"body":"x"}}` + "\n"))
	f.Add([]byte(meta + `{"type":"ok","op":1,"ns":2,"resp":{"status":200,"body_b64":"/w=="}}`))
	f.Add([]byte(`{"type":"meta","v":1}` + "\n" + `{"type":"fault","fault":"crash","detail":{"a":[1,{"b":null}]},"ns":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := history.NewReader(strings.NewReader(string(data)))
		var e history.Event
		for i := 0; i < 10000; i++ {
			if err := r.Next(&e); err != nil {
				var le *history.LineError
				if !errors.Is(err, io.EOF) && !errors.As(err, &le) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				break
			}
			// Whatever decodes must encode and decode to the same event.
			line := history.AppendEvent(nil, &e)
			r2 := history.NewReader(strings.NewReader(meta + string(line) + "\n"))
			var m, e2 history.Event
			if err := r2.Next(&m); err != nil {
				t.Fatal(err)
			}
			if e.Type != history.TypeMeta {
				if err := r2.Next(&e2); err != nil {
					t.Fatalf("re-read of %s: %v", line, err)
				}
			}
		}
		_, _ = history.Load(strings.NewReader(string(data)), history.LoadOptions{})
	})
}
