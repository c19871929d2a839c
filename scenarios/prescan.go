package scenarios

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Bounds checked on a scenario file's bytes before the YAML parser sees
// them: the parser builds its whole tree first (200 KB of "[" took 8.8 GB)
// and is quadratic in the keys of one mapping (200k keys took 97 s), so a
// bound checked on the tree comes too late. The bundled scenarios are
// under 100 lines and 4 KiB; docs/scenarios.md lists every limit.
const (
	// MaxFileBytes bounds a scenario file's size.
	MaxFileBytes = 256 << 10
	// MaxLines bounds a scenario file's lines.
	MaxLines = 5000
)

// ReadFile reads a scenario file, refusing one larger than [MaxFileBytes]
// after reading one byte past it: /dev/zero, a FIFO or a multi-gigabyte
// file cost no more than the bound. The refusal is an [*Errors] at 1:1.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &Errors{List: []Error{{File: path, Line: 1, Col: 1,
			Msg: fmt.Sprintf("the file is larger than %d KiB, the most a scenario file may be", MaxFileBytes>>10)}}}
	}
	return data, nil
}

// prescan checks data against the bounds no parser should be handed more
// than: size, lines, and nesting — flow collections ("[", "{") and the
// compact block indicators that open a level on one line ("- - -",
// "? ? ?"), counted outside quotes and comments. It returns the position
// of the first excess and what was exceeded.
func prescan(data []byte) (pos, string, bool) {
	if len(data) > MaxFileBytes {
		return pos{1, 1}, fmt.Sprintf("the file is larger than %d KiB, the most a scenario file may be", MaxFileBytes>>10), false
	}
	if n := bytes.Count(data, []byte("\n")); n > MaxLines {
		return pos{MaxLines + 1, 1}, fmt.Sprintf("the file has more than %d lines, the most a scenario file may have", MaxLines), false
	}
	deep := func(line, col int) (pos, string, bool) {
		return pos{line, col}, fmt.Sprintf("values are nested more than %d levels deep", maxDepth), false
	}
	line, col := 1, 0
	flow := 0         // open "[" and "{"
	var quote byte    // the quote a scalar is open in, or 0
	lineStart := true // only spaces and indicators so far on this line
	inline := 0       // block levels opened by indicators on this line
	var last byte     // the last byte before the blanks, on this line (0: none)
	for i := 0; i < len(data); i++ {
		c := data[i]
		col++
		if c == '\n' {
			// A quoted scalar may span lines: quote stays as it is.
			line, col, lineStart, inline, last = line+1, 0, true, 0, 0
			continue
		}
		if quote != 0 {
			switch {
			case quote == '"' && c == '\\':
				i, col = i+1, col+1 // the escaped byte
			case c == quote && quote == '\'' && i+1 < len(data) && data[i+1] == '\'':
				i, col = i+1, col+1 // '' inside a single-quoted scalar
			case c == quote:
				quote = 0
			}
			continue
		}
		prev := byte('\n')
		if i > 0 {
			prev = data[i-1]
		}
		// A quote opens a scalar only where a value starts: at the start
		// of a line, or after an indicator; inside a plain scalar (it's)
		// it is a letter like any other.
		valueStart := last == 0 || bytes.IndexByte([]byte(":-?,[{"), last) >= 0
		switch {
		case c == '#' && (prev == ' ' || prev == '\t' || prev == '\n' || i == 0):
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline is counted above
			continue
		case (c == '"' || c == '\'') && valueStart:
			quote = c
		case c == '[' || c == '{':
			if flow++; flow+inline > maxDepth {
				return deep(line, col)
			}
		case c == ']' || c == '}':
			flow = max(flow-1, 0)
		case lineStart && (c == '-' || c == '?' || c == ':') && (i+1 == len(data) || data[i+1] == ' ' || data[i+1] == '\t'):
			if inline++; flow+inline > maxDepth {
				return deep(line, col)
			}
			continue
		}
		if c != ' ' && c != '\t' {
			lineStart, last = false, c
		}
	}
	return pos{}, "", true
}
