package partcheck

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/idemchaos/idemchaos/history"
)

// LoadParts loads the partitions parts of a [Split] as one history. A
// malformed line is a [history.LineError] with its line number in the original
// history. One partition whose lines are in history order streams from its
// file; several, or the body partitions (whose invoke lines were written
// when the attempt completed), are merged back into history order in
// memory first.
func LoadParts(parts []Part, ordered bool, opts history.LoadOptions) (*history.History, error) {
	if len(parts) == 1 && ordered {
		f, err := os.Open(parts[0].File)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		h, err := history.Load(bufio.NewReaderSize(f, 256<<10), opts)
		if err != nil {
			return nil, mapLine(err, func(n int) (int, error) { return lineAt(parts[0].Lines, n) })
		}
		return h, nil
	}
	type line struct {
		n   uint64
		raw []byte
	}
	var lines []line
	for _, p := range parts {
		data, err := os.ReadFile(p.File)
		if err != nil {
			return nil, err
		}
		nums, err := os.ReadFile(p.Lines)
		if err != nil {
			return nil, err
		}
		for i := 0; len(data) > 0; i++ {
			if 8*i+8 > len(nums) {
				return nil, fmt.Errorf("partition %s: more lines than line numbers", p.File)
			}
			end := bytes.IndexByte(data, '\n')
			if end < 0 {
				end = len(data)
			}
			lines = append(lines, line{binary.LittleEndian.Uint64(nums[8*i:]), data[:end]})
			data = data[min(end+1, len(data)):]
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return int(a.n) - int(b.n) })
	// The meta event heads every partition: keep one.
	lines = slices.CompactFunc(lines, func(a, b line) bool { return a.n == b.n })
	raws := make([][]byte, len(lines))
	for i, l := range lines {
		raws[i] = l.raw
	}
	h, err := history.Load(&linesReader{lines: raws}, opts)
	if err != nil {
		return nil, mapLine(err, func(n int) (int, error) {
			if n-1 < len(lines) {
				return int(lines[n-1].n), nil
			}
			return int(lines[len(lines)-1].n) + 1, nil
		})
	}
	return h, nil
}

// mapLine renumbers the line of a LineError from a partition's to the
// original history's.
func mapLine(err error, to func(int) (int, error)) error {
	var le *history.LineError
	if !errors.As(err, &le) {
		return err
	}
	n, merr := to(le.Line)
	if merr != nil {
		return errors.Join(err, merr)
	}
	out := *le
	out.Line = n
	return &out
}

// lineAt reads the original number of line n (1-based) of a partition.
func lineAt(name string, n int) (int, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(n-1)*8); err != nil {
		if errors.Is(err, io.EOF) && n > 1 {
			// Past the last line: the line after the last one.
			prev, perr := lineAt(name, n-1)
			return prev + 1, perr
		}
		return 0, err
	}
	return int(binary.LittleEndian.Uint64(b[:])), nil
}

// linesReader reads lines that sit apart in memory as one JSONL stream,
// without copying them into one buffer first.
type linesReader struct {
	lines [][]byte
	off   int // bytes of lines[0] already read; len+1 once its newline was
}

func (r *linesReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.lines) > 0 {
		l := r.lines[0]
		if r.off < len(l) {
			c := copy(p[n:], l[r.off:])
			n += c
			r.off += c
			continue
		}
		p[n] = '\n'
		n++
		r.lines, r.off = r.lines[1:], 0
	}
	if n == 0 && len(r.lines) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// InvokeLines returns the original line numbers of the invoke events of
// parts, sorted: in a history loaded from them ([LoadParts]), attempt i
// was invoked on line InvokeLines[i].
func InvokeLines(parts []Part) ([]int64, error) {
	var out []int64
	for _, p := range parts {
		b, err := os.ReadFile(p.Invokes)
		if err != nil {
			return nil, err
		}
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, int64(binary.LittleEndian.Uint64(b[i:])))
		}
	}
	slices.Sort(out)
	return out, nil
}
