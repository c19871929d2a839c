package history

import (
	"errors"
	"fmt"

	"github.com/valyala/fastjson"
)

// The seams through which the fast paths outside this package (the
// partitioned check's split) read a history: the raw lines of one reader,
// and the parse and body rules of the loader, so that every reader of the
// format says the same thing about the same line.

// RawLine returns the next line that is not blank, as read (a byte order
// mark on the first line dropped), and whether it ended with a newline;
// [Reader.Line] numbers it. Its errors are those of [Reader.Next] for an
// unreadable line.
func (r *Reader) RawLine() (raw []byte, complete bool, err error) { return r.nextLine() }

// DecodeLine decodes a line [Reader.RawLine] returned into e, with the
// errors [Reader.Next] gives for it ([ErrTruncated] for a cut-off last line).
func (r *Reader) DecodeLine(raw []byte, complete bool, e *Event) error {
	v, err := r.parse(raw, complete)
	if err != nil {
		return err
	}
	_, err = r.decode(v, e)
	return err
}

// ParseLine parses line number line with p, with the loader's messages: a
// [LineError], wrapping [ErrTruncated] for an incomplete last line.
func ParseLine(p *fastjson.Parser, raw []byte, complete bool, line int) (*fastjson.Value, error) {
	return parseLine(p, raw, complete, line)
}

// ResponseBody returns the body of a parsed response object ("body", or
// "body_b64" decoded) as the loader reads it.
func ResponseBody(resp *fastjson.Value) ([]byte, error) { return body(resp) }

// MarshalJSON writes e as its history line ([AppendEvent]), so that
// encoding/json speaks the format's one codec: there is no second,
// tag-driven encoding of an event. A struct tag could not say it anyway
// (which fields a type carries, headers as an ordered object, body or
// body_b64, an explicit effects_recorded false). json.Marshal escapes <,
// > and & in it, as it does everywhere (the same JSON).
func (e Event) MarshalJSON() ([]byte, error) { return AppendEvent(nil, &e), nil }

// UnmarshalJSON reads one history line into e by the reference decoding:
// [Reader]'s strict JSON and its every field rule (a type this package
// does not know leaves only e.Type set).
func (e *Event) UnmarshalJSON(b []byte) error {
	var p fastjson.Parser
	v, err := parseLine(&p, b, true, 0)
	if err == nil {
		*e = Event{}
		_, err = decodeEvent(v, e)
	}
	var le *LineError
	switch {
	case errors.As(err, &le) && errors.Is(le.Err, ErrAmbiguous):
		return fmt.Errorf("history event: %s (%w)", le.Msg, ErrAmbiguous)
	case errors.As(err, &le):
		return errors.New("history event: " + le.Msg)
	case err != nil:
		return fmt.Errorf("history event: %w", err)
	}
	return nil
}
