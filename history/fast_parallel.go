package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// loadBlock is how many bytes of input [loadParallel] hands a scanning
// goroutine at once: enough lines (about a thousand) that handing them over
// costs little, few enough that a small history still spreads over the
// goroutines and the blocks in flight stay a few MiB.
const loadBlock = 128 << 10

// maxBlock bounds a block grown to hold one long line, in blocks: 8 MiB. A
// longer line, and everything after it, is read by the serial loop, which
// bounds a line at [MaxLineBytes] with its own message.
const maxBlock = 32

// block is a run of whole lines of the input, scanned on a worker and then
// applied in order. Its buffers are reused once it has been applied.
type block struct {
	data  []byte
	first bool  // data starts at line 1
	err   error // a read error after data's lines
	lines int   // lines in data, blank ones included
	recs  []scanned
	esc   []byte          // the strings the scanner unescaped, and decoded bodies
	hdrs  []scannedHeader // the response headers recs refer to
	done  chan struct{}
}

// loadParallel is [Load] with the scanning of lines spread over workers
// goroutines: this one reads blocks of whole lines, hands them out, and
// applies the scanned lines block by block in input order, so that
// interning, the op index, line numbers and the first error are exactly
// those of [loadSerial]. A line the scanner did not read goes through the
// reference path here, in its turn.
func loadParallel(r io.Reader, h *History, l *loader, z *sizer, workers, size int) (*History, error) {
	rd := &Reader{}
	// Enough blocks in flight that each worker has one to scan while the
	// next waits and this goroutine applies another; more would only add
	// to the heap.
	inflight := workers + 2
	work := make(chan *block, inflight)
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		ls := l.scanner()
		wg.Go(func() {
			for b := range work {
				if !quit.Load() {
					ls.scanBlock(b)
				}
				b.done <- struct{}{}
			}
		})
	}
	defer func() {
		quit.Store(true)
		close(work)
		wg.Wait()
	}()

	var (
		queue, free []*block
		carry       []byte // the start of a line the last block did not end
		eof, first  = false, true
		long        []byte // a line longer than maxBlock blocks: the serial loop reads from it on
		e           Event
	)
	for {
		for len(queue) < inflight && !eof && long == nil {
			var b *block
			if n := len(free); n > 0 {
				b, free = free[n-1], free[:n-1]
			} else {
				b = &block{data: make([]byte, 0, size), done: make(chan struct{}, 1)}
			}
			b.first, first = first, false
			b.err = nil
			b.data = append(b.data[:0], carry...)
			carry = carry[:0]
			var nl int
			b.data, nl, eof, b.err = fill(r, b.data, size, maxBlock*size)
			switch {
			case eof || b.err != nil:
				// The last block: an unfinished line is the input's last
				// (or is dropped before a read error, as bufio does).
				if b.err != nil {
					b.data = b.data[:nl]
					eof = true
				}
			case nl == 0:
				// No line ends in maxBlock bytes: the serial loop reads
				// that line and the rest, once the blocks before it are
				// applied.
				long, b.data = b.data, make([]byte, 0, size)
				free = append(free, b)
				continue
			default:
				carry = append(carry, b.data[nl:]...)
				b.data = b.data[:nl]
			}
			queue = append(queue, b)
			work <- b
		}
		if len(queue) == 0 {
			break
		}
		b := queue[0]
		queue = queue[1:]
		<-b.done
		stop, err := l.applyBlock(rd, b, z, &e)
		if err != nil {
			return nil, err
		}
		if stop {
			return h.done(l, rd)
		}
		if len(b.data) > 4*size {
			b.data = make([]byte, 0, size) // a long line's buffer is not kept
		}
		free = append(free, b)
	}
	if long != nil {
		rd.r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(long), r), 256<<10)
		return loadSerial(rd, h, l, z)
	}
	return h.done(l, rd)
}

// fill reads r into buf until it holds size bytes and a line ends in it,
// or until the input ends or fails. nl is the length of buf's whole lines:
// 0 when no line ends in it, so that buf has grown to limit.
func fill(r io.Reader, buf []byte, size, limit int) (_ []byte, nl int, eof bool, err error) {
	if cap(buf) < size {
		buf = append(make([]byte, 0, size), buf...)
	}
	scanned, empty := 0, 0
	for {
		if len(buf) == cap(buf) {
			if i := bytes.LastIndexByte(buf[scanned:], '\n'); i >= 0 {
				return buf, scanned + i + 1, false, nil
			}
			scanned = len(buf)
			if len(buf) >= limit {
				return buf, 0, false, nil
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, rerr := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n == 0 && rerr == nil {
			if empty++; empty >= 100 {
				rerr = io.ErrNoProgress
			}
		}
		if rerr != nil {
			nl := bytes.LastIndexByte(buf, '\n') + 1
			if errors.Is(rerr, io.EOF) {
				return buf, nl, true, nil
			}
			return buf, nl, false, rerr
		}
	}
}

// scanBlock scans the lines of b into its records: the line splitting of
// [Reader.nextLine] (a byte order mark dropped from line 1, blank lines
// counted and skipped, a last line without a newline not complete).
func (ls *lineScan) scanBlock(b *block) {
	ls.sc.esc, ls.hdrs, ls.data = b.esc[:0], b.hdrs[:0], b.data
	if cap(b.recs) == 0 {
		b.recs = make([]scanned, 0, len(b.data)/100) // lines of a history are 100 to 400 bytes
	}
	b.recs = b.recs[:0]
	data := b.data
	n, pos := int32(0), 0
	for pos < len(data) {
		start, end, complete := pos, len(data), false
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end, complete = pos+i, true
		}
		pos = end + 1
		n++
		if n == 1 && b.first && bytes.HasPrefix(data[start:end], utf8BOM) {
			start += len(utf8BOM)
		}
		raw := data[start:end]
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		b.recs = append(b.recs, scanned{start: int32(start), end: int32(end), line: n, complete: complete})
		ls.scan(raw, &b.recs[len(b.recs)-1])
	}
	b.lines = int(n)
	b.esc, b.hdrs = ls.sc.esc, ls.hdrs
	ls.sc.esc, ls.hdrs, ls.sc.line, ls.data = nil, nil, nil, nil
}

// applyBlock applies the scanned lines of b in order, as [loadSerial] would
// have. stop is true after a truncated last line.
func (l *loader) applyBlock(rd *Reader, b *block, z *sizer, e *Event) (stop bool, err error) {
	base := rd.line
	for i := range b.recs {
		r := &b.recs[i]
		raw := b.data[r.start:r.end]
		rd.line = base + int(r.line)
		z.line(len(raw)+1, l)
		if rd.sawMeta && r.kind != 0 {
			handled, err := l.apply(r, texts{b.data, b.esc}, b.hdrs)
			if err != nil {
				return false, &LineError{Line: rd.line, Msg: err.Error()}
			}
			if handled {
				continue
			}
		}
		if stop, err := l.slow(rd, raw, r.complete, e); stop || err != nil {
			return stop, err
		}
	}
	rd.line = base + b.lines
	if b.err != nil {
		return false, fmt.Errorf("read history: %w", b.err)
	}
	return false, nil
}
