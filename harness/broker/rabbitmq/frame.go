package rabbitmq

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The part of AMQP 0-9-1 the consumer's link reads (the spec's section
// 4.2): frames, the basic class's deliveries and settlements, and the
// headers table of a content header. Everything else passes through as
// the bytes it arrived as.

// Frame types.
const (
	frameMethod    = 1
	frameHeader    = 2
	frameBody      = 3
	frameHeartbeat = 8
	frameEnd       = 0xCE
)

// Class and method ids the hop acts on.
const (
	classConnection       = 10
	methodConnectionClose = 50

	classChannel         = 20
	methodChannelOpen    = 10
	methodChannelClose   = 40
	methodChannelCloseOK = 41

	classBasic           = 60
	methodBasicConsume   = 20
	methodBasicConsumeOK = 21
	methodBasicGet       = 70
	methodBasicGetEmpty  = 72
	methodBasicDeliver   = 60
	methodBasicGetOK     = 71
	methodBasicAck       = 80
	methodBasicReject    = 90
	methodBasicNack      = 120
)

// protocolHeader is what a 0-9-1 client sends first.
var protocolHeader = []byte("AMQP\x00\x00\x09\x01")

// maxFrame bounds one frame's payload: a server negotiates frame_max
// (128 KiB by default, RabbitMQ's limit is far below this), so a size past
// it is a stream out of step, not a frame.
const maxFrame = 64 << 20

// frame is one frame, its raw bytes kept for forwarding.
type frame struct {
	typ     byte
	channel uint16
	payload []byte
	raw     []byte // header, payload and frame-end, as read
}

var errFrameEnd = errors.New("amqp: frame does not end with 0xCE")

// readFrame reads one frame.
func readFrame(r *bufio.Reader) (frame, error) {
	var hdr [7]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	size := binary.BigEndian.Uint32(hdr[3:7])
	if size > maxFrame {
		return frame{}, fmt.Errorf("amqp: frame of %d bytes", size)
	}
	raw := make([]byte, 7+int(size)+1)
	copy(raw, hdr[:])
	if _, err := io.ReadFull(r, raw[7:]); err != nil {
		return frame{}, err
	}
	if raw[len(raw)-1] != frameEnd {
		return frame{}, errFrameEnd
	}
	return frame{typ: hdr[0], channel: binary.BigEndian.Uint16(hdr[1:3]), payload: raw[7 : 7+size], raw: raw}, nil
}

// connectionClose is a connection.close frame (channel 0) with reply code
// 320, connection-forced, naming no failing method.
func connectionClose(text string) []byte {
	text = text[:min(len(text), 255)]
	args := make([]byte, 0, 2+1+len(text)+4)
	args = binary.BigEndian.AppendUint16(args, 320)
	args = append(args, byte(len(text)))
	args = append(args, text...)
	args = binary.BigEndian.AppendUint16(args, 0)
	args = binary.BigEndian.AppendUint16(args, 0)
	payload := binary.BigEndian.AppendUint16(nil, classConnection)
	payload = binary.BigEndian.AppendUint16(payload, methodConnectionClose)
	payload = append(payload, args...)
	raw := []byte{frameMethod, 0, 0}
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(payload)))
	raw = append(raw, payload...)
	return append(raw, frameEnd)
}

// method is a method frame's class and method ids, and its arguments.
func (f frame) method() (class, method uint16, args []byte, ok bool) {
	if f.typ != frameMethod || len(f.payload) < 4 {
		return 0, 0, nil, false
	}
	return binary.BigEndian.Uint16(f.payload), binary.BigEndian.Uint16(f.payload[2:]), f.payload[4:], true
}

// reader decodes the spec's field types from a byte slice; the first
// decoding error sticks.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("amqp: field runs past its frame")

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) octet() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) short() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) long() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) longlong() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) shortstr() string { return string(r.take(int(r.octet()))) }

func (r *reader) longstr() []byte { return r.take(int(r.long())) }

// deliver is basic.deliver's (or basic.get-ok's) tag and redelivered flag.
type deliver struct {
	consumer    string // basic.deliver's consumer tag ("" for get-ok)
	tag         uint64
	redelivered bool
	noAck       bool // settled as sent: its consumer (or get) said no-ack
}

// parseDeliver reads basic.deliver (consumer-tag, delivery-tag,
// redelivered, ...) or basic.get-ok (delivery-tag, redelivered, ...).
func parseDeliver(method uint16, args []byte) (deliver, error) {
	r := &reader{b: args}
	var d deliver
	if method == methodBasicDeliver {
		d.consumer = r.shortstr()
	}
	d.tag, d.redelivered = r.longlong(), r.octet()&1 != 0
	return d, r.err
}

// parseNoAck reads basic.consume's (reserved, queue, consumer-tag, bits:
// no-local, no-ack, ...) or basic.get's (reserved, queue, bits: no-ack)
// no-ack flag: the node counts such a delivery acknowledged as it sends it.
func parseNoAck(method uint16, args []byte) (bool, error) {
	r := &reader{b: args}
	r.short()
	r.shortstr()
	if method == methodBasicConsume {
		r.shortstr()
		return r.octet()&2 != 0, r.err
	}
	return r.octet()&1 != 0, r.err
}

// settle is one basic.ack, basic.reject or basic.nack from a consumer.
type settle struct {
	tag      uint64
	multiple bool // every outstanding tag up to tag (all of them for 0)
	// final says the broker will not deliver the message again: an ack,
	// or a reject or nack without requeue.
	final bool
	ack   bool
}

// parseSettle reads the arguments of basic.ack (tag, multiple), reject
// (tag, requeue) or nack (tag, multiple and requeue bits).
func parseSettle(method uint16, args []byte) (settle, error) {
	r := &reader{b: args}
	s := settle{tag: r.longlong()}
	bits := r.octet()
	switch method {
	case methodBasicAck:
		s.multiple, s.final, s.ack = bits&1 != 0, true, true
	case methodBasicReject:
		s.final = bits&1 == 0
	case methodBasicNack:
		s.multiple, s.final = bits&1 != 0, bits&2 == 0
	default:
		return settle{}, fmt.Errorf("amqp: method 60.%d is not a settlement", method)
	}
	return s, r.err
}

// headersOf reads a content header frame's headers table (property 13,
// after content-type and content-encoding); nil when it has none.
func headersOf(payload []byte) (map[string]any, error) {
	r := &reader{b: payload}
	r.short()    // class
	r.short()    // weight
	r.longlong() // body size
	var flags []uint16
	for {
		f := r.short()
		flags = append(flags, f)
		if f&1 == 0 || r.err != nil {
			break
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	first := flags[0]
	if first&(1<<15) != 0 {
		r.shortstr() // content-type
	}
	if first&(1<<14) != 0 {
		r.shortstr() // content-encoding
	}
	if first&(1<<13) == 0 {
		return nil, r.err
	}
	t := table(r)
	return t, r.err
}

// table reads a field table as RabbitMQ writes one (its type letters, the
// errata's: s a signed short, l a signed long long, x a byte array).
func table(r *reader) map[string]any {
	body := r.longstr()
	if r.err != nil {
		return nil
	}
	tr := &reader{b: body}
	out := map[string]any{}
	for len(tr.b) > 0 && tr.err == nil {
		name := tr.shortstr()
		v := value(tr)
		if tr.err == nil {
			out[name] = v
		}
	}
	r.err = tr.err
	return out
}

func value(r *reader) any {
	switch t := r.octet(); t {
	case 't':
		return r.octet() != 0
	case 'b':
		return int64(int8(r.octet()))
	case 'B':
		return int64(r.octet())
	case 's':
		return int64(int16(r.short()))
	case 'u':
		return int64(r.short())
	case 'I':
		return int64(int32(r.long()))
	case 'i':
		return int64(r.long())
	case 'l':
		return int64(r.longlong())
	case 'f':
		return float64(math.Float32frombits(r.long()))
	case 'd':
		return math.Float64frombits(r.longlong())
	case 'D':
		r.take(5)
		return nil
	case 'S', 'x':
		return string(r.longstr())
	case 'A':
		arr := &reader{b: r.longstr()}
		var out []any
		for len(arr.b) > 0 && arr.err == nil {
			out = append(out, value(arr))
		}
		if arr.err != nil && r.err == nil {
			r.err = arr.err
		}
		return out
	case 'T':
		return int64(r.longlong())
	case 'F':
		return table(r)
	case 'V':
		return nil
	default:
		if r.err == nil {
			r.err = fmt.Errorf("amqp: field type %q", t)
		}
		return nil
	}
}

// intOf reads a header that is a number of any integer width, or a
// decimal string (what a publisher may have written it as).
func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		var n int64
		if _, err := fmt.Sscan(x, &n); err == nil {
			return n, true
		}
	}
	return 0, false
}
