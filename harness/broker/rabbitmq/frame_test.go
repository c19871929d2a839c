package rabbitmq

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/idemchaos/idemchaos/harness/broker"
)

// enc writes the spec's field types, as a client or the node would.
type enc struct{ bytes.Buffer }

func (e *enc) octet(b byte)      { e.WriteByte(b) }
func (e *enc) short(v uint16)    { _ = binary.Write(e, binary.BigEndian, v) }
func (e *enc) long(v uint32)     { _ = binary.Write(e, binary.BigEndian, v) }
func (e *enc) longlong(v uint64) { _ = binary.Write(e, binary.BigEndian, v) }
func (e *enc) shortstr(s string) { e.octet(byte(len(s))); e.WriteString(s) }
func (e *enc) longstr(b []byte)  { e.long(uint32(len(b))); e.Write(b) }
func (e *enc) field(name string, typ byte, val []byte) {
	e.shortstr(name)
	e.octet(typ)
	e.Write(val)
}

func rawFrame(typ byte, ch uint16, payload []byte) []byte {
	var e enc
	e.octet(typ)
	e.short(ch)
	e.long(uint32(len(payload)))
	e.Write(payload)
	e.octet(frameEnd)
	return e.Bytes()
}

func method(class, m uint16, args []byte) []byte {
	var e enc
	e.short(class)
	e.short(m)
	e.Write(args)
	return e.Bytes()
}

// contentHeader is a basic content header with a content type and a
// headers table of every type the harness reads or must skip.
func contentHeader(seq uint64, deliveryCount []byte) []byte {
	var tbl enc
	var s enc
	s.longstr([]byte("m-1"))
	tbl.field(broker.HeaderIntent, 'S', s.Bytes())
	var nested enc
	var inner enc
	inner.field("a", 't', []byte{1})
	nested.longstr(inner.Bytes())
	tbl.field("nested", 'F', nested.Bytes())
	var arr enc
	var items enc
	items.octet('I')
	items.long(7)
	items.octet('d')
	items.longlong(0)
	arr.longstr(items.Bytes())
	tbl.field("list", 'A', arr.Bytes())
	tbl.field("dec", 'D', []byte{2, 0, 0, 0, 9})
	var l enc
	l.longlong(seq)
	tbl.field(HeaderSeq, 'l', l.Bytes())
	if deliveryCount != nil {
		tbl.field("x-delivery-count", deliveryCount[0], deliveryCount[1:])
	}
	var e enc
	e.short(classBasic)
	e.short(0)
	e.longlong(11)
	e.short(1<<15 | 1<<13 | 1<<12) // content-type, headers, delivery-mode
	e.shortstr("application/json")
	e.longstr(tbl.Bytes())
	e.octet(2)
	return e.Bytes()
}

func deliverArgs(tag uint64, redelivered bool) []byte {
	var e enc
	e.shortstr("ctag-1")
	e.longlong(tag)
	if redelivered {
		e.octet(1)
	} else {
		e.octet(0)
	}
	e.shortstr("")
	e.shortstr("idemchaos")
	return e.Bytes()
}

func settleArgs(tag uint64, bits byte) []byte {
	var e enc
	e.longlong(tag)
	e.octet(bits)
	return e.Bytes()
}

func read(t *testing.T, raw []byte) frame {
	t.Helper()
	f, err := readFrame(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.raw, raw) {
		t.Fatalf("frame's raw bytes differ from what was read")
	}
	return f
}

func TestHeadersOf_EveryFieldType(t *testing.T) {
	got, err := headersOf(read(t, rawFrame(frameHeader, 1, contentHeader(42, []byte{'l', 0, 0, 0, 0, 0, 0, 0, 3}))).payload)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		broker.HeaderIntent: "m-1", "nested": map[string]any{"a": true}, "list": []any{int64(7), float64(0)},
		"dec": nil, HeaderSeq: int64(42), "x-delivery-count": int64(3),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("headers = %#v\nwant %#v", got, want)
	}
	if _, err := headersOf([]byte{0, 60, 0}); err == nil {
		t.Error("a truncated content header parsed")
	}
}

func TestReadFrame_BadEnd(t *testing.T) {
	raw := rawFrame(frameMethod, 1, method(classBasic, methodBasicAck, settleArgs(1, 0)))
	raw[len(raw)-1] = 0
	if _, err := readFrame(bufio.NewReader(bytes.NewReader(raw))); err == nil {
		t.Error("a frame without its 0xCE end was read")
	}
}

func TestParseSettle(t *testing.T) {
	for name, c := range map[string]struct {
		method uint16
		bits   byte
		want   settle
	}{
		"ack":             {methodBasicAck, 0, settle{tag: 5, final: true, ack: true}},
		"ack multiple":    {methodBasicAck, 1, settle{tag: 5, multiple: true, final: true, ack: true}},
		"reject requeue":  {methodBasicReject, 1, settle{tag: 5}},
		"reject drop":     {methodBasicReject, 0, settle{tag: 5, final: true}},
		"nack requeue":    {methodBasicNack, 2, settle{tag: 5}},
		"nack multi drop": {methodBasicNack, 1, settle{tag: 5, multiple: true, final: true}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseSettle(c.method, settleArgs(5, c.bits))
			if err != nil || got != c.want {
				t.Errorf("parseSettle = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// The link learns tags from the node's deliveries (the count from
// x-delivery-count, or the redelivered flag of a classic queue) and turns
// a consumer's settlement into the acks of the messages it settles.
func TestLink_DeliveriesToAcks(t *testing.T) {
	h := &hop{}
	l := newLink()
	node := func(tag, seq uint64, redelivered bool, count []byte) {
		l.fromNode(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicDeliver, deliverArgs(tag, redelivered)))))
		l.fromNode(h, read(t, rawFrame(frameHeader, 1, contentHeader(seq, count))))
	}
	node(1, 10, false, nil)
	node(2, 11, true, []byte{'l', 0, 0, 0, 0, 0, 0, 0, 1}) // a quorum queue's second delivery
	node(3, 12, true, nil)                                 // a classic queue's redelivery: at least the second
	node(4, 13, false, nil)
	if _, err := h.list(); err != nil {
		t.Fatal(err)
	}
	acks, tags := l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicAck, settleArgs(3, 1)))))
	want := []broker.Ack{{Seq: 10, Delivered: 1, Kind: "ack"}, {Seq: 11, Delivered: 2, Kind: "ack"}, {Seq: 12, Delivered: 2, Kind: "ack"}}
	if !reflect.DeepEqual(acks, want) || !reflect.DeepEqual(tags, []uint64{1, 2, 3}) {
		t.Fatalf("multiple ack up to 3: acks %+v tags %v; want %+v", acks, tags, want)
	}
	l.forget(1, tags)
	acks, tags = l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicNack, settleArgs(4, 2)))))
	if !reflect.DeepEqual(acks, []broker.Ack{{Seq: 13, Delivered: 1, Kind: "nak"}}) || !reflect.DeepEqual(tags, []uint64{4}) {
		t.Errorf("nack with requeue: acks %+v tags %v; want a nak of seq 13, tag 4 settled", acks, tags)
	}
	acks, _ = l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicReject, settleArgs(4, 0)))))
	if !reflect.DeepEqual(acks, []broker.Ack{{Seq: 13, Delivered: 1, Kind: "term"}}) {
		t.Errorf("reject without requeue: acks %+v; want a term of seq 13", acks)
	}
	// A channel opened again starts its tags at 1: the old ones are gone.
	l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classChannel, methodChannelOpen, []byte{0}))))
	if acks, _ := l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicAck, settleArgs(4, 0))))); len(acks) != 0 {
		t.Errorf("ack of a tag of the channel's earlier life: %+v", acks)
	}
}

// A no-ack consumer's delivery is settled as the node sends it: the link
// hands it back as an ack once its content header is read, and a normal
// consumer's delivery on the same channel is not.
func TestLink_NoAckConsumer(t *testing.T) {
	h := &hop{}
	l := newLink()
	consume := func(tag string, noAck bool) {
		var e enc
		e.short(0)
		e.shortstr("idemchaos")
		e.shortstr(tag)
		if noAck {
			e.octet(2)
		} else {
			e.octet(0)
		}
		e.long(0) // arguments
		l.settlement(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicConsume, e.Bytes()))))
		var ok enc
		ok.shortstr(tag)
		l.fromNode(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicConsumeOK, ok.Bytes()))))
	}
	consume("ctag-1", true)
	consume("ctag-2", false)
	deliverTo := func(ctag string, tag, seq uint64) (broker.Ack, bool) {
		var e enc
		e.shortstr(ctag)
		e.longlong(tag)
		e.octet(0)
		e.shortstr("")
		e.shortstr("idemchaos")
		l.fromNode(h, read(t, rawFrame(frameMethod, 1, method(classBasic, methodBasicDeliver, e.Bytes()))))
		return l.fromNode(h, read(t, rawFrame(frameHeader, 1, contentHeader(seq, nil))))
	}
	if a, ok := deliverTo("ctag-1", 1, 7); !ok || a != (broker.Ack{Seq: 7, Delivered: 1, Kind: "ack"}) {
		t.Errorf("no-ack delivery: %+v, %v; want an ack of seq 7", a, ok)
	}
	if a, ok := deliverTo("ctag-2", 2, 8); ok {
		t.Errorf("a manual-ack consumer's delivery came back as ack %+v", a)
	}
	if _, err := h.list(); err != nil {
		t.Fatal(err)
	}
}
