package history_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/history"
)

const invoke1 = `{"type":"invoke","op":1,"ns":1,"tenant":"t1","key":"k","req":{"method":"POST","path":"/x","body":"b"}}` + "\n"

// TestLoad_AcceptsByteOrderMark: a history saved by an editor that starts
// UTF-8 files with a BOM loads through both paths, as without it.
func TestLoad_AcceptsByteOrderMark(t *testing.T) {
	t.Parallel()
	in := "\ufeff" + meta + invoke1
	h, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if h.Meta.Scenario != "s" || len(h.Attempts) != 1 {
		t.Errorf("loaded meta %+v and %d attempts, want scenario s and 1", h.Meta, len(h.Attempts))
	}
	r := history.NewReader(strings.NewReader(in))
	var e history.Event
	n := 0
	for {
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Reader.Next: %v", err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("Reader read %d events, want 2", n)
	}
	// Only at the very start: a BOM elsewhere is a malformed line.
	if _, err := history.Load(strings.NewReader(meta+"\ufeff"+invoke1), history.LoadOptions{}); err == nil {
		t.Error("Load accepted a BOM on line 2")
	}
}

// TestLoad_ShortErrors: a line nested thousands deep, or a long malformed
// line, is refused with its line number in a message a terminal line holds
// (the parser's own message ran to 14,000 characters).
func TestLoad_ShortErrors(t *testing.T) {
	t.Parallel()
	deep := `{"type":"invoke","op":1,"ns":1,"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}\n"
	long := `{"type":"invoke","op":1,"ns":1,"x":"` + strings.Repeat("é", 20000) + `",}` + "\n"
	for name, c := range map[string]struct{ line, want string }{
		"deep": {deep, "nested 5001 levels deep"},
		"long": {long, "not valid JSON"},
	} {
		for _, load := range []func(string) error{loadErr, readErr} {
			err := load(meta + c.line)
			var le *history.LineError
			if !errors.As(err, &le) || le.Line != 2 {
				t.Fatalf("%s: err %v, want a LineError on line 2", name, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || utf8.RuneCountInString(msg) >= 200 || !utf8.ValidString(msg) {
				t.Errorf("%s: %d characters, want < 200 valid UTF-8 with %q: %.300s", name, utf8.RuneCountInString(msg), c.want, msg)
			}
		}
	}
}

func loadErr(in string) error {
	_, err := history.Load(strings.NewReader(in), history.LoadOptions{})
	return err
}

func readErr(in string) error {
	r := history.NewReader(strings.NewReader(in))
	var e history.Event
	for {
		if err := r.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
