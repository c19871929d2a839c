package htmlpage

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/idemchaos/idemchaos/report"
)

//go:embed assets/report.tmpl assets/run.tmpl assets/report.css assets/report.js
var assets embed.FS

// The page's stylesheet and script, embedded verbatim. The page's Content
// Security Policy allows exactly these two by hash and nothing else (no
// network, no other script), so that even a bug in escaping could not run
// a script that a system under test smuggled into a response body.
var (
	pageCSS, pageJS string
	pageCSP         string
	pageTmpl        *template.Template
)

func init() {
	read := func(name string) string {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			panic("report: embedded asset missing: " + err.Error())
		}
		return string(b)
	}
	pageCSS, pageJS = read("report.css"), read("report.js")
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	pageCSP = "default-src 'none'; style-src " + hash(pageCSS) + "; script-src " + hash(pageJS) + "; base-uri 'none'; form-action 'none'"
	pageTmpl = template.Must(newPage().ParseFS(assets, "assets/report.tmpl"))
}

func newPage() *template.Template {
	return template.New("report.tmpl").Funcs(template.FuncMap{
		"upper":       strings.ToUpper,
		"dash":        report.OrDash,
		"join":        func(s []string) string { return strings.Join(s, ", ") },
		"ms":          func(n int64) string { return fmt.Sprintf("%d ms", n) },
		"f":           func(x float64) string { return fmt.Sprintf("%.1f", x) },
		"ops":         report.Ops,
		"label":       report.Run.Label,
		"historyHref": func(p string) template.URL { return template.URL(historyHref(p)) },
	})
}

// twinTmpl is the page with its run sections through their template
// (assets/run.tmpl redefines the page's "run-section" block), parsed when
// first asked for: only the test that holds html_run.go to it renders it,
// so the command's start-up does not pay for parsing it.
var twinTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(newPage().ParseFS(assets, "assets/report.tmpl", "assets/run.tmpl"))
})

// The drawing's geometry, in SVG user units (the SVG scales to the page).
const (
	svgWidth   = 1000.0
	gutter     = 92.0 // lane labels
	rightPad   = 14.0
	plotWidth  = svgWidth - gutter - rightPad
	axisHeight = 34.0 // tick labels, then the labels of fault regions
	rowHeight  = 30.0 // an aimed fault's mark and kind, then the bar
	barTop     = 13.0
	barHeight  = 14.0
	effectsRow = 30.0
	charWidth  = 6.2 // of the 11px labels, to keep labels from colliding
)

// Write writes rep as one self-contained HTML page: the verdict, the
// catch matrix when there is one, one section per run and, for each
// violating key, its timeline from timelines (see [Timelines]) drawn as
// inline SVG. Every string from the system under test is escaped: by
// html/template's contextual escaping in the page's frame, by the same
// escaping applied by hand in the run sections (html_run.go); the page
// works with scripts off.
func Write(w io.Writer, rep report.Report, timelines []Timeline) error {
	return write(w, rep, timelines, true)
}

// write writes the page; byHand writes the run sections with
// html_run.go, else through their template (assets/run.tmpl), the source
// of truth the hand-written code is tested against.
func write(w io.Writer, rep report.Report, timelines []Timeline, byHand bool) error {
	p := page{Report: rep, CSS: template.CSS(pageCSS), JS: template.JS(pageJS), CSP: pageCSP}
	for i, run := range rep.Runs {
		// In a catch matrix a mutant's violations are what was expected:
		// folded under the mutant, after the matrix a reader came for.
		rv := runView{Run: run, Index: i, Label: run.Label(), Status: runStatus(run), Fold: rep.Matrix != nil && run.Mutant != ""}
		for _, st := range run.Steps {
			for _, iv := range st.Invariants {
				rv.Invariants = append(rv.Invariants, ivRow{Step: st.Name, Expect: st.Expect, Invariant: iv,
					Expected: st.Expect == iv.Name})
				rv.Violations += len(iv.Violations)
			}
		}
		p.Runs = append(p.Runs, rv)
		p.Violations += rv.Violations
	}
	type where struct {
		run, step int
		invariant string
		index     int
	}
	drawn := map[where]bool{}
	// A repeat links to the first drawn timeline of its signature, which
	// may come later in the page when earlier runs' histories were lost.
	like := map[string]int{}
	for i, t := range timelines {
		if _, ok := like[t.Signature]; !ok && !t.Repeat && t.Signature != "" {
			like[t.Signature] = i
		}
	}
	repeats := map[string][]indexEntry{}
	repeatRuns := map[string]map[int]bool{}
	for i, t := range timelines {
		if t.Run < 0 || t.Run >= len(p.Runs) {
			continue
		}
		drawn[where{t.Run, t.Step, t.Invariant, t.Violation}] = true
		var tv timelineView
		if t.Repeat {
			tv = timelineView{Timeline: t, History: rep.Runs[t.Run].History}
			if l, ok := like[t.Signature]; ok {
				tv.LikeID, tv.LikeN, tv.LikeRun = fmt.Sprintf("v%d", l+1), l+1, seedLabel(rep.Runs[timelines[l].Run])
			}
		} else {
			tv = layout(t)
		}
		tv.ID = fmt.Sprintf("v%d", i+1)
		tv.N = i + 1
		e := indexEntry{ID: tv.ID, N: tv.N, Invariant: t.Invariant, Run: rep.Runs[t.Run].Label(), Tenant: t.Tenant, Key: t.Key, sig: t.Signature}
		if _, ok := like[t.Signature]; ok && t.Repeat {
			// Repeats differ by seed above all.
			e.Run = seedLabel(rep.Runs[t.Run])
			repeats[t.Signature] = append(repeats[t.Signature], e)
			if repeatRuns[t.Signature] == nil {
				repeatRuns[t.Signature] = map[int]bool{}
			}
			repeatRuns[t.Signature][t.Run] = true
			p.Runs[t.Run].Timelines = append(p.Runs[t.Run].Timelines, tv)
			continue
		}
		p.Runs[t.Run].Timelines = append(p.Runs[t.Run].Timelines, tv)
		if !p.Runs[t.Run].Fold {
			p.Index = append(p.Index, e)
			continue
		}
		if n := len(p.Folded); n == 0 || p.Folded[n-1].Run != t.Run {
			p.Folded = append(p.Folded, foldedGroup{Run: t.Run, Label: e.Run})
		}
		p.Folded[len(p.Folded)-1].Entries = append(p.Folded[len(p.Folded)-1].Entries, e)
	}
	// The first drawn timeline of a signature says how many repeats it
	// stands for; its index entry lists them.
	for ri := range p.Runs {
		for ti := range p.Runs[ri].Timelines {
			tv := &p.Runs[ri].Timelines[ti]
			if l, ok := like[tv.Signature]; ok && tv.N == l+1 {
				tv.Repeats, tv.RepeatRuns = len(repeats[tv.Signature]), len(repeatRuns[tv.Signature])
			}
		}
	}
	attach := func(es []indexEntry) {
		for i := range es {
			if l, ok := like[es[i].sig]; ok && es[i].N == l+1 {
				es[i].Repeats = repeats[es[i].sig]
			}
		}
	}
	attach(p.Index)
	for gi := range p.Folded {
		attach(p.Folded[gi].Entries)
	}
	// Violations without a timeline (past the cap, or none computed) are
	// still listed with their explanations: the page is the whole story.
	for ri := range p.Runs {
		rv := &p.Runs[ri]
		for si, st := range rv.Steps {
			for _, iv := range st.Invariants {
				for vi, v := range iv.Violations {
					if drawn[where{ri, si, iv.Name, vi}] {
						continue
					}
					if len(rv.Undrawn) == maxUndrawn {
						rv.MoreUndrawn++
						continue
					}
					rv.Undrawn = append(rv.Undrawn, undrawn{Invariant: iv.Name, Violation: v})
				}
			}
		}
	}
	tmpl := pageTmpl
	if !byHand {
		tmpl = twinTmpl()
	} else {
		for ri := range p.Runs {
			var b htmlBuf
			writeRun(&b, &p.Runs[ri])
			p.Runs[ri].HTML = template.HTML(b.String()) // escaped as it was written
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if _, err := w.Write(printable(buf.Bytes())); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// printable returns page as valid UTF-8 without control characters other
// than tab, newline and carriage return: html/template escapes markup but
// passes through whatever bytes a service put in a body or a header, and a
// browser shows a page that is not UTF-8 as mojibake, or not at all. A byte
// that is not UTF-8 and a C1 control become U+FFFD; a C0 control or DEL
// becomes its visible Control Picture (␀, ␁, … ␡), so the reader sees it
// was there.
func printable(page []byte) []byte {
	clean := true
	for i := 0; i < len(page) && clean; {
		r, n := utf8.DecodeRune(page[i:])
		clean = !badRune(r, n)
		i += n
	}
	if clean {
		return page
	}
	out := make([]byte, 0, len(page)+64)
	for i := 0; i < len(page); {
		r, n := utf8.DecodeRune(page[i:])
		switch {
		case !badRune(r, n):
			out = append(out, page[i:i+n]...)
		case r < 0x20:
			out = utf8.AppendRune(out, 0x2400+r)
		case r == 0x7f:
			out = utf8.AppendRune(out, 0x2421)
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i += n
	}
	return out
}

func badRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true
	case r == '\t' || r == '\n' || r == '\r':
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

type page struct {
	Report     report.Report
	CSS        template.CSS
	JS         template.JS
	CSP        string
	Runs       []runView
	Violations int
	// Index lists the violations a reader must see; Folded groups the
	// expected ones (a mutant's, in a catch matrix) by run.
	Index  []indexEntry
	Folded []foldedGroup
}

// foldedGroup is one mutant run's expected violations.
type foldedGroup struct {
	Run     int
	Label   string
	Entries []indexEntry
}

type indexEntry struct {
	ID, Run, Invariant, Tenant, Key string
	N                               int
	// Repeats are the violations of other runs with the same signature,
	// listed under the one drawn.
	Repeats []indexEntry
	sig     string
}

type runView struct {
	report.Run
	Index  int
	Label  string
	Status string
	// Fold shows the run collapsed: a mutant's run in a catch matrix.
	Fold       bool
	Invariants []ivRow
	Violations int
	Timelines  []timelineView
	// Undrawn are the violations without a timeline, up to maxUndrawn;
	// MoreUndrawn counts the rest.
	Undrawn     []undrawn
	MoreUndrawn int
	// HTML is the section as writeRun wrote it (empty on the template's
	// page, which renders the section through the "run" template).
	HTML template.HTML
}

type undrawn struct {
	Invariant string
	report.Violation
}

// maxUndrawn caps the violations listed without a timeline in one run.
const maxUndrawn = 500

type ivRow struct {
	Step, Expect string
	report.Invariant
	Expected bool
}

// seedLabel tells apart runs of one scenario: a seed sweep's repeats.
func seedLabel(run report.Run) string { return fmt.Sprintf("%s, seed %d", run.Label(), run.Seed) }

func runStatus(run report.Run) string {
	switch {
	case run.Error != "":
		return "error"
	case run.Met && run.Expect == "caught":
		return "caught"
	case run.Met:
		return "pass"
	}
	return "fail"
}

// timelineView is a [Timeline] laid out in SVG units.
type timelineView struct {
	Timeline
	ID       string
	N        int
	Height   float64
	PlotX    float64
	PlotEnd  float64
	PlotTop  float64
	PlotBot  float64
	EffectsY float64
	// EffectsLabelY and RegionH place the effects row's label and the
	// height of fault regions (every lane and the effects row).
	EffectsLabelY float64
	RegionH       float64
	// StartMSRun is the window's start in ms since the run started.
	StartMSRun  float64
	MaxAttempts int
	Ticks       []tickView
	LaneBox     []laneView
	Bars        []barView
	Regions     []regionView
	Marks       []markView
	Effs        []effView
	// Repeats and RepeatRuns count the violations, and the runs they are
	// in, that have this drawn timeline's signature and are not drawn.
	Repeats, RepeatRuns int
	// For a repeat: the drawn timeline of its signature (LikeID, LikeN,
	// LikeRun; empty when none is drawn) and its run's history file.
	LikeID, LikeRun string
	LikeN           int
	History         string
	// A client run's timeline: the asked-for waits and the key breaks
	// drawn on the intents' rows, and each intent's trail in words.
	Waits      []waitView
	Rekeys     []rekeyView
	TrailViews []trailView
	// OpenTrails is how many trails show open, the violation's intents
	// first; the MoreTrails after them are folded (an outage hits a dozen
	// intents, and a dozen tables would bury the next timeline). OpenTrails
	// is -1 when none is folded.
	OpenTrails, MoreTrails int
}

// openTrails is how many intents' tables a client run's timeline shows
// unfolded.
const openTrails = 3

// waitView is the wait a Retry-After asked for, drawn from the answer that
// asked it along the row of the next attempt; Short says that attempt came
// sooner.
type waitView struct {
	X, Y, W float64
	Short   bool
	Tip     string
}

// rekeyView is a key break: a mark before an attempt that sent another
// key than its intent's previous one.
type rekeyView struct {
	X, Y1, Y2, LabelY float64
	Tip               string
}

// trailView is a [Trail] in words, for the table under a client run's
// drawing.
type trailView struct {
	Trail
	Summary, BeliefText, TruthText, VerdictText string
	Rows                                        []trailRow
}

// trailRow is one attempt's row of a trail's table.
type trailRow struct {
	TrailStep
	Key, PrevKey, Gap, Asked, By string
}

type tickView struct {
	X     float64
	Label string
}

type laneView struct {
	Label       string
	Y, H, TextY float64
	Odd         bool
}

type barView struct {
	Bar
	X, Y, W, H   float64
	Label        string
	LabelX       float64
	LabelY       float64
	LabelOutside bool
}

type regionView struct {
	FaultMark
	X, W, LabelY float64
}

type markView struct {
	FaultMark
	X, Y           float64
	Points         string
	Label          string
	LabelX, LabelY float64
}

type effView struct {
	EffectMark
	X, Y           float64
	Points         string
	ShowLabel      bool
	Label          string
	LabelX, LabelY float64
	LabelEnd       bool // anchored at its end, left of the marks
}

func layout(t Timeline) timelineView {
	v := timelineView{Timeline: t, PlotX: gutter, PlotEnd: gutter + plotWidth, PlotTop: axisHeight}
	x := func(ms float64) float64 {
		if t.WidthMS <= 0 {
			return gutter
		}
		return round1(gutter + ms/t.WidthMS*plotWidth)
	}
	rowY := func(row int) float64 { return axisHeight + float64(row)*rowHeight }
	v.PlotBot = rowY(t.Rows)
	v.EffectsY = v.PlotBot
	v.EffectsLabelY = v.EffectsY + effectsRow/2 + 4
	v.RegionH = v.PlotBot - v.PlotTop + effectsRow
	v.Height = v.PlotBot + effectsRow + 4
	v.StartMSRun = nsToMS(t.StartNS)
	v.MaxAttempts = MaxTimelineAttempts
	for _, ms := range ticks(t.WidthMS) {
		v.Ticks = append(v.Ticks, tickView{X: x(ms), Label: trimMS(ms)})
	}
	for i, l := range t.Lanes {
		y := rowY(l.Row)
		h := float64(l.Rows) * rowHeight
		v.LaneBox = append(v.LaneBox, laneView{Label: l.Label, Y: y, H: h, TextY: y + rowHeight/2 + 4, Odd: i%2 == 1})
	}
	// Bars, with a label inside when it fits, else after the bar when the
	// next bar on the row leaves room; a shorter label when the long one
	// fits nowhere, else none (the tooltip has it all).
	for _, l := range t.Lanes {
		for i, b := range l.Bars {
			bv := barView{Bar: b, X: x(b.StartMS), Y: rowY(b.Row) + barTop, H: barHeight}
			bv.W = math.Max(round1(x(b.EndMS)-bv.X), 2)
			bv.LabelY = bv.Y + barHeight - 3
			next := v.PlotEnd
			for _, o := range l.Bars[i+1:] {
				if o.Row == b.Row {
					next = x(o.StartMS)
					break
				}
			}
			for _, label := range barLabels(b) {
				need := textWidth(label) + 6
				if bv.W >= need {
					bv.Label, bv.LabelX = label, bv.X+3
					break
				}
				if bv.X+bv.W+need <= next {
					bv.Label, bv.LabelX, bv.LabelOutside = label, bv.X+bv.W+3, true
					break
				}
			}
			v.Bars = append(v.Bars, bv)
		}
	}
	lastMark := map[int]float64{}
	for _, f := range t.Faults {
		if f.Region {
			v.Regions = append(v.Regions, regionView{FaultMark: f, X: x(f.StartMS), W: math.Max(round1(x(f.EndMS)-x(f.StartMS)), 2), LabelY: axisHeight - 8})
			continue
		}
		mx, my := x(f.StartMS), rowY(f.Row)+3
		m := markView{FaultMark: f, X: mx, Y: my, LabelX: mx + 7, LabelY: my + 7,
			Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f", mx-5, my, mx+5, my, mx, my+8)}
		// Label a mark with its kind unless the previous mark's label on
		// the row is in the way.
		if last, ok := lastMark[f.Row]; (!ok || mx > last) && m.LabelX+textWidth(f.Kind) <= svgWidth {
			m.Label = f.Kind
			lastMark[f.Row] = m.LabelX + textWidth(f.Kind)
		}
		v.Marks = append(v.Marks, m)
	}
	v.Effs = layoutEffects(t.Effects, x, v.EffectsY+12)
	for _, tr := range t.Trails {
		for _, st := range tr.Steps {
			top := rowY(st.Row)
			if st.AskedMS > 0 {
				w := waitView{X: x(st.WaitFromMS), Y: top + barTop + barHeight + 2, Short: st.Short}
				w.W = math.Max(round1(x(st.WaitToMS)-w.X), 2)
				w.Tip = fmt.Sprintf("Retry-After asked for %d ms before op %d; it came after %s ms", st.AskedMS, st.Op, fmtMS(st.GapMS))
				if st.Short {
					w.Tip += ": sooner than asked"
				}
				if st.WaitToMS >= t.WidthMS {
					w.Tip += " (the wait runs past the drawing's end)"
				}
				v.Waits = append(v.Waits, w)
			}
			if st.Rekeyed {
				bx := x(st.StartMS)
				v.Rekeys = append(v.Rekeys, rekeyView{X: round1(bx - 3), Y1: top + 2, Y2: top + rowHeight - 2, LabelY: top + 10,
					Tip: fmt.Sprintf("key changed before op %d: %s, was %s", st.Op, report.OrNone(st.Key), report.OrNone(st.PrevKey))})
			}
		}
		v.TrailViews = append(v.TrailViews, trailText(tr))
	}
	v.OpenTrails = -1
	if n := len(v.TrailViews); n > openTrails {
		v.OpenTrails, v.MoreTrails = openTrails, n-openTrails
	}
	return v
}

// trailText puts a trail in words.
func trailText(tr Trail) trailView {
	tv := trailView{Trail: tr}
	tv.Summary = fmt.Sprintf("%d attempt%s, %d key%s", len(tr.Steps), plural(len(tr.Steps)), tr.Keys, plural(tr.Keys))
	switch tr.Belief {
	case "":
		tv.BeliefText = "not recorded"
	default:
		tv.BeliefText = fmt.Sprintf("%s (exit %d", tr.Belief, tr.Exit)
		if tr.BeliefError != "" {
			tv.BeliefText += ": " + tr.BeliefError
		}
		if tr.Resource != "" {
			tv.BeliefText += fmt.Sprintf(", printing %q", tr.Resource)
		}
		tv.BeliefText += ")"
	}
	switch tr.Truth {
	case "":
		tv.TruthText = "not recorded (the history has no effects)"
	case "executed":
		tv.TruthText = "executed: " + clip(strings.Join(tr.Effects, ", "), 80)
	default:
		tv.TruthText = tr.Truth
	}
	switch tr.Verdict {
	case "agrees":
		tv.VerdictText = "they agree"
	case "contradicts":
		tv.VerdictText = "they contradict each other"
	case "unknown":
		tv.VerdictText = "the client said it cannot know"
	}
	for j, st := range tr.Steps {
		r := trailRow{TrailStep: st, Key: report.OrNone(st.Key), PrevKey: report.OrNone(st.PrevKey), Gap: "first attempt", Asked: "—", By: st.By}
		switch {
		case st.HasGap:
			r.Gap = fmtMS(st.GapMS) + " ms"
		case j > 0:
			r.Gap = "— (the previous attempt never completed)"
		}
		if st.AskedMS > 0 {
			r.Asked = fmt.Sprintf("%d ms", st.AskedMS)
		}
		if r.By == "" {
			r.By = "—"
		}
		tv.Rows = append(tv.Rows, r)
	}
	return tv
}

// layoutEffects draws effects that fall on one spot (an oracle reads them
// together) side by side, so they can be counted, and labels each group
// once with the effects' ids.
func layoutEffects(effects []EffectMark, x func(float64) float64, y float64) []effView {
	sorted := slices.Clone(effects)
	slices.SortStableFunc(sorted, func(a, b EffectMark) int { return cmp.Compare(a.AtMS, b.AtMS) })
	var out []effView
	for i := 0; i < len(sorted); {
		j, x0 := i, x(sorted[i].AtMS)
		for j < len(sorted) && x(sorted[j].AtMS)-x0 < 4 {
			j++
		}
		var ids []string
		for k := i; k < j; k++ {
			ex := x0 + float64(k-i)*10
			ids = append(ids, sorted[k].ID)
			out = append(out, effView{EffectMark: sorted[k], X: ex, Y: y,
				Points: fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", ex, y-6, ex+5, y, ex, y+6, ex-5, y)})
		}
		g := &out[len(out)-1]
		g.ShowLabel, g.LabelY = true, y+4
		g.Label = clip(strings.Join(ids, ", "), 60)
		if j-i > 1 {
			g.Label = fmt.Sprintf("%d effects: %s", j-i, g.Label)
		}
		if g.X+9+textWidth(g.Label) <= svgWidth {
			g.LabelX = g.X + 9
		} else {
			g.LabelX, g.LabelEnd = x0-9, true
		}
		i = j
	}
	return out
}

// barLabels returns the labels of a bar, longest first: op and status, or
// op, outcome and the client's error.
func barLabels(b Bar) []string {
	short := fmt.Sprintf("op %d · %s", b.Op, b.Outcome)
	switch {
	case b.Status != 0:
		return []string{fmt.Sprintf("op %d · %d", b.Op, b.Status)}
	case b.Open:
		return []string{fmt.Sprintf("op %d · open (no completion)", b.Op), fmt.Sprintf("op %d · open", b.Op)}
	case b.Error != "":
		return []string{short + ": " + clip(b.Error, 40), short}
	}
	return []string{short}
}

// textWidth estimates the width of an 11px label.
func textWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * charWidth }

// ticks returns about eight round tick positions across [0, width] ms.
func ticks(width float64) []float64 {
	if width <= 0 {
		return []float64{0}
	}
	raw := width / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for t := 0.0; t <= width+step/1e6; t += step {
		out = append(out, t)
	}
	return out
}

func trimMS(ms float64) string {
	s := fmt.Sprintf("%.3f", ms)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + " ms"
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
