package history

import (
	"errors"
	"io"
)

// LoadByEvents exposes loadByEvents to the external tests.
var LoadByEvents = func(r io.Reader, keep []string) (*History, error) { return loadByEvents(r, keep, nil) }

// LoadByEventsWith is LoadByEvents with a header predicate.
var LoadByEventsWith = loadByEvents

// loadByEvents is Load without the direct path: every line is decoded into
// an Event by the Reader and applied by History.add. The direct path must
// give exactly the same History, and exactly the same errors.
func loadByEvents(r io.Reader, keep []string, keepFn func(string) bool) (*History, error) {
	if keep == nil {
		keep = DefaultKeepHeaders
	}
	h := &History{}
	rd := NewReader(r)
	l := newLoader(h, keep)
	l.keepFn = keepFn
	var e Event
	for {
		err := rd.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrTruncated) {
			h.Truncated = true
			break
		}
		if err != nil {
			return nil, err
		}
		l.count(e.NS)
		if err := h.add(&e, l); err != nil {
			return nil, &LineError{Line: rd.Line(), Msg: err.Error()}
		}
	}
	return h.done(l, rd)
}

// LoadBlocks is Load with workers scanning goroutines (the serial loop
// below 2) and blocks of block bytes, so that the tests reach block
// boundaries, long lines and the serial fallback with small inputs.
func LoadBlocks(r io.Reader, opts LoadOptions, workers, block int) (*History, error) {
	return loadFast(r, opts, workers, block)
}
