package bench

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoMarkers says an existing report holds no generated block: writing
// the run into it would drop every section measured by hand, so bench
// refuses it before measuring anything.
var ErrNoMarkers = errors.New("holds no idemchaos bench markers")

// span is where a block sits in a file: begin marker line to the end of
// the end marker line.
type span struct{ start, end int }

// findBlocks returns where each marked block of md sits. Markers must be
// alone on their line, known, balanced, not nested and not repeated.
func findBlocks(md []byte) (map[string]span, error) {
	known := append([]string{blockHeader, SectionTargets, blockSections, blockLoaded}, Sections()...)
	spans := map[string]span{}
	open, openAt := "", 0
	for off, n := 0, 1; off < len(md); n++ {
		end := bytes.IndexByte(md[off:], '\n')
		next := len(md)
		if end >= 0 {
			next = off + end + 1
		}
		line := strings.TrimSpace(string(md[off:next]))
		name, closing, ok := parseMarker(line)
		switch {
		case !ok:
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("line %d: unknown block %q (known: %s)", n, name, strings.Join(known, ", "))
		case !closing && open != "":
			return nil, fmt.Errorf("line %d: block %q begins inside block %q", n, name, open)
		case !closing:
			if _, dup := spans[name]; dup {
				return nil, fmt.Errorf("line %d: block %q appears twice", n, name)
			}
			open, openAt = name, off
		case name != open:
			return nil, fmt.Errorf("line %d: block %q ends, but %q is open", n, name, orDash(open))
		default:
			spans[name] = span{openAt, next}
			open = ""
		}
		off = next
	}
	if open != "" {
		return nil, fmt.Errorf("block %q never ends", open)
	}
	return spans, nil
}

func parseMarker(line string) (name string, closing, ok bool) {
	const pre, post = "<!-- ", " -->"
	if !strings.HasPrefix(line, pre) || !strings.HasSuffix(line, post) {
		return "", false, false
	}
	body := strings.TrimSuffix(strings.TrimPrefix(line, pre), post)
	if closing = strings.HasPrefix(body, "/"); closing {
		body = body[1:]
	}
	name, ok = strings.CutPrefix(body, "idemchaos bench: ")
	return strings.TrimSpace(name), closing, ok
}

// CheckSplice says whether a run can be written into the existing report
// md: its markers parse and there is at least one. The command asks before
// it measures, so that a long run does not end in a refusal.
func CheckSplice(md []byte) error {
	spans, err := findBlocks(md)
	if err != nil {
		return err
	}
	if len(spans) == 0 {
		return ErrNoMarkers
	}
	return nil
}

// rewrites says which of the run's blocks [Report.Splice] replaces: with
// --only, the sections named (and their rows of the Sections table) and
// the Targets table if named; without, every block the run made, the
// Targets table only if every section it is made of ran.
func (r *Report) rewrites(name string) bool {
	ran := func(s string) bool {
		return slices.ContainsFunc(r.Sections, func(sr SectionRun) bool { return sr.Name == s })
	}
	if w := r.Options.Rewrite; w != nil {
		switch name {
		case blockHeader:
			return false
		case blockSections:
			return slices.ContainsFunc(w, func(s string) bool { return s != SectionTargets })
		}
		return slices.Contains(w, name)
	}
	if name == SectionTargets {
		for _, s := range TargetSections() {
			if !ran(s) {
				return false
			}
		}
	}
	return true
}

// KeptTargets says the run left an existing Targets table as it was,
// because not every section it is made of ran.
func (r *Report) KeptTargets() bool {
	return !r.rewrites(SectionTargets)
}

// Splice writes the run into the existing report md: each block it
// rewrites replaces the block of that name (a block the file lacks is
// added at its end), the Sections table's rows are replaced by section
// name and the others kept, and everything outside the markers — the
// sections measured by hand — stays byte for byte.
func (r *Report) Splice(md []byte) ([]byte, error) {
	spans, err := findBlocks(md)
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, ErrNoMarkers
	}
	type edit struct {
		at   span
		text string
	}
	var edits []edit
	var tail strings.Builder
	for _, b := range r.blocks() {
		if !r.rewrites(b.name) {
			continue
		}
		at, ok := spans[b.name]
		if b.name == blockSections && ok {
			b.text = mergeRows(string(md[at.start:at.end]), b.text)
		}
		if !ok {
			tail.WriteString("\n" + b.marked())
			continue
		}
		edits = append(edits, edit{at, b.marked()})
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.at.start - b.at.start })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(md[last:e.at.start])
		out.WriteString(e.text)
		last = e.at.end
	}
	out.Write(md[last:])
	if tail.Len() > 0 {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		out.WriteString(tail.String())
	}
	return out.Bytes(), nil
}

// mergeRows returns the Sections block text fresh with the rows of the old
// block (markers included) kept: a row the run made replaces the old row
// of its section in place, the others stay, the run's new sections come
// last. A row is keyed by its first cell; old rows of another layout are
// dropped.
func mergeRows(old, fresh string) string {
	key := func(line string) (string, bool) {
		if !strings.HasPrefix(line, "| ") || line == sectionsHead || strings.HasPrefix(line, "|---") {
			return "", false
		}
		k, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		return k, true
	}
	lines := strings.Split(fresh, "\n")
	made := map[string]string{}
	first, last := -1, -1
	for i, l := range lines {
		if k, ok := key(l); ok {
			made[k] = l
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return fresh
	}
	var rows []string
	for _, l := range strings.Split(old, "\n") {
		k, ok := key(l)
		if !ok || strings.Count(l, "|") != strings.Count(sectionsHead, "|") {
			continue
		}
		if m, ok := made[k]; ok {
			l = m
			delete(made, k)
		}
		rows = append(rows, l)
	}
	for _, l := range lines[first : last+1] {
		if k, ok := key(l); ok && made[k] != "" {
			rows = append(rows, l)
		}
	}
	return strings.Join(slices.Concat(lines[:first], rows, lines[last+1:]), "\n")
}
