package htmlpage

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/idemchaos/idemchaos/report"
)

// A report of a seed sweep has hundreds of run sections, each with its
// facts, a row per invariant and a timeline (or a repeat's row) per
// violation: through html/template (reflection for every field and call)
// they were most of the merge's CPU. They are written here by hand
// instead, byte for byte what their template (assets/run.tmpl, the
// markup's source of truth) writes — TestWriteHTML_ByHandIsTheTemplate
// compares the two pages over every golden history and a set of outcomes —
// every string from a report going through text: the escaping html/template
// applies in element text, in <title> and in quoted attribute values (the
// only places data goes). Nothing here writes a script, a style or a URL
// from data (the one href is the page's own anchor, "#v<n>"). The page's
// frame, catch matrix and index are written by its template alone.

// htmlEscaper escapes as html/template does in text and quoted attributes
// (its htmlReplacementTable: NUL becomes U+FFFD, '+' is escaped too).
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// htmlBuf writes markup (raw) and untrusted strings (text).
type htmlBuf struct{ bytes.Buffer }

func (b *htmlBuf) raw(s ...string) {
	for _, x := range s {
		b.WriteString(x)
	}
}

// text writes s escaped: safe in element text and in a quoted attribute.
func (b *htmlBuf) text(s string) { htmlEscaper.WriteString(b, s) }

// enclose writes s escaped between two pieces of markup.
func (b *htmlBuf) enclose(open, s, close string) {
	b.raw(open)
	b.text(s)
	b.raw(close)
}

func (b *htmlBuf) int(n int64) { b.WriteString(strconv.FormatInt(n, 10)) }

// historyLink writes a link to a history file by its path (relative to
// the page when the command could make it so). A path that would read as
// a URL scheme ("javascript:…") is made a relative path first.
func (b *htmlBuf) historyLink(path string) {
	b.raw("<a")
	b.attr("href", historyHref(path))
	b.enclose("><code>", path, "</code></a>")
}

// historyHref is the link to a history file at path.
func historyHref(path string) string {
	href := filepath.ToSlash(path)
	if i := strings.IndexAny(href, ":/"); i >= 0 && href[i] == ':' {
		href = "./" + href
	}
	return href
}

// writeRun writes one run's section.
func writeRun(b *htmlBuf, rv *runView) {
	b.raw("\n<section class=\"run\" id=\"run-")
	b.int(int64(rv.Index))
	b.raw("\">")
	if rv.Fold {
		b.raw("<details><summary>")
	}
	b.enclose("\n<h2><span class=\"badge ", rv.Status, "\">")
	b.text(strings.ToUpper(rv.Status))
	b.enclose("</span> ", rv.Run.Label(), "</h2>")
	if rv.Fold {
		b.raw("</summary>")
	}
	b.enclose("\n<dl class=\"facts\">\n<dt>scenario</dt><dd>", report.OrDash(rv.Scenario), "</dd>")
	if rv.File != "" {
		b.enclose("<dt>file</dt><dd><code>", rv.File, "</code></dd>")
	}
	if rv.Mutant != "" {
		b.enclose("<dt>mutant</dt><dd><code>", rv.Mutant, "</code></dd>")
	}
	b.raw("\n<dt>seed</dt><dd>")
	b.int(rv.Seed)
	b.raw("</dd>\n<dt>verdict</dt><dd>")
	b.text(rv.Verdict)
	if rv.Met {
		b.raw(" (as expected)")
	}
	b.raw("</dd>")
	if rv.Requests != 0 {
		b.raw("<dt>traffic</dt><dd>")
		b.int(rv.Requests)
		b.raw(" requests in ")
		b.int(rv.ElapsedMS)
		b.raw(" ms</dd>")
	}
	if rv.Repro != "" {
		b.enclose("<dt>reproducibility</dt><dd>", rv.Repro, "</dd>")
	}
	if rv.History != "" {
		b.raw("<dt>history</dt><dd>")
		b.historyLink(rv.History)
		b.raw("</dd>")
	}
	if rv.Replay != "" {
		b.enclose("<dt>replay</dt><dd><code class=\"cmd\">", rv.Replay, "</code></dd>")
	}
	b.raw("\n</dl>")
	if rv.Error != "" {
		b.enclose("\n<p class=\"error\">error: ", rv.Error, "</p>")
	}
	for i := range rv.Timelines {
		tv := &rv.Timelines[i]
		if tv.Repeat {
			writeRepeat(b, tv)
		} else {
			writeTimeline(b, tv)
		}
	}
	if len(rv.Undrawn) > 0 {
		b.raw("\n<section class=\"undrawn\">\n<h3>Violations without a timeline</h3>\n<ol>")
		for _, u := range rv.Undrawn {
			b.enclose("\n<li><strong>", u.Invariant, "</strong>")
			if u.Tenant != "" {
				b.enclose(", tenant <code>", u.Tenant, "</code>")
			}
			if u.Key != "" {
				b.enclose(", key <code>", u.Key, "</code>")
			}
			if len(u.Ops) > 0 {
				b.raw(", ops ")
				b.text(report.Ops(u.Ops))
			}
			b.raw(": ")
			b.text(u.Explanation)
			if u.Cause != "" {
				b.enclose(" <em>Likely cause: ", u.Cause, ".</em>")
			}
			b.raw("</li>")
		}
		b.raw("\n</ol>")
		if rv.MoreUndrawn != 0 {
			b.raw("<p class=\"muted\">and ")
			b.int(int64(rv.MoreUndrawn))
			b.raw(" more; the text and JSON reports list them all.</p>")
		}
		b.raw("\n</section>")
	}
	if len(rv.Invariants) > 0 {
		b.raw("\n<table class=\"invariants\">\n<thead><tr><th>step</th><th>invariant</th><th>verdict</th><th class=\"num\">checked</th><th class=\"num\">violations</th><th>note</th></tr></thead>\n<tbody>")
		for _, iv := range rv.Invariants {
			b.raw("\n<tr><td>")
			b.text(report.OrDash(iv.Step))
			if iv.Expect != "" && iv.Expect != "clean" {
				b.enclose(" <span class=\"muted\">(expects ", iv.Expect, ")</span>")
			}
			b.raw("</td>\n<td>")
			b.text(iv.Name)
			if iv.Expected {
				b.raw(" <span class=\"muted\">expected</span>")
			}
			b.enclose("</td>\n<td><span class=\"badge ", iv.Verdict, "\">")
			b.text(strings.ToUpper(iv.Verdict))
			b.raw("</span></td><td class=\"num\">")
			b.int(int64(iv.Checked))
			b.raw("</td><td class=\"num\">")
			b.int(int64(len(iv.Violations)))
			b.enclose("</td><td>", iv.Reason, "</td></tr>")
		}
		b.raw("\n</tbody>\n</table>")
	}
	if s := rv.Shrunk; s != nil {
		b.raw("\n<details class=\"shrunk\"><summary>shrunk from ")
		b.int(int64(s.From))
		b.raw(" to ")
		b.int(int64(s.To))
		b.raw(" intents in ")
		b.int(int64(s.Runs))
		b.enclose(" runs: minimal plan</summary><pre>", s.Plan, "</pre></details>")
	}
	if rv.Fold {
		b.raw("</details>")
	}
	b.raw("\n</section>")
}

// writeRepeat writes a violation whose failure is drawn in another run:
// its header and explanation, the timeline that shows it and the file
// that holds this run's history.
func writeRepeat(b *htmlBuf, tv *timelineView) {
	openTimeline(b, "timeline repeat", tv)
	b.enclose("\n<p class=\"muted\">Ops ", report.Ops(tv.Ops), ". Not drawn: the same failure as")
	if tv.LikeID != "" {
		b.enclose(" <a href=\"#", tv.LikeID, "\">#")
		b.int(int64(tv.LikeN))
		b.enclose("</a> (", tv.LikeRun, "), whose timeline shows it")
	} else {
		b.raw(" another run's")
	}
	b.raw(".")
	if tv.History != "" {
		b.raw(" This run's history: ")
		b.historyLink(tv.History)
		b.raw(".")
	}
	b.raw("</p>\n</section>")
}

// openTimeline opens a timeline's section, with the attributes the page's
// filters read, and writes its header.
func openTimeline(b *htmlBuf, class string, tv *timelineView) {
	b.raw("\n<section")
	b.attr("class", class)
	b.attr("id", tv.ID)
	b.attr("data-key", tv.Key)
	b.attr("data-tenant", tv.Tenant)
	b.attr("data-invariant", tv.Invariant)
	b.raw(">")
	writeHeader(b, tv)
}

func (b *htmlBuf) float(f float64) {
	var a [32]byte
	b.Write(strconv.AppendFloat(a[:0], f, 'g', -1, 64)) // as fmt.Sprint prints it
}

// attr writes ` name="value"` with value escaped.
func (b *htmlBuf) attr(name, value string) {
	b.raw(" ", name, "=\"")
	b.text(value)
	b.raw("\"")
}

// attrNum writes ` name="number"`.
func (b *htmlBuf) attrNum(name string, f float64) {
	b.raw(" ", name, "=\"")
	b.float(f)
	b.raw("\"")
}

// writeTimeline writes a drawn timeline: the header, the explanation and
// the SVG drawing of [layout].
func writeTimeline(b *htmlBuf, tv *timelineView) {
	openTimeline(b, "timeline", tv)
	if tv.Cause != "" {
		b.enclose("\n<p class=\"cause\"><strong>Likely cause:</strong> ", tv.Cause, "</p>")
	}
	if tv.Repeats != 0 {
		b.raw("\n<p class=\"repeats\">The same failure (same scenario, invariant and cause; the same explanation but for names and numbers) in ")
		b.int(int64(tv.Repeats))
		b.raw(" more violation", plural(tv.Repeats), " of ")
		b.int(int64(tv.RepeatRuns))
		b.raw(" other run", plural(tv.RepeatRuns), " is not drawn again: each is listed in its run with the file that holds that run's history.</p>")
	}
	if tv.Missing != "" {
		b.enclose("\n<p class=\"missing\">No timeline: ", tv.Missing, ". Ops ")
		b.text(report.Ops(tv.Ops))
		b.raw(".</p>\n</section>")
		return
	}
	b.raw("\n<p class=\"muted\">Ops ")
	b.text(report.Ops(tv.Ops))
	b.raw(" are outlined. The axis counts ms from ", strconv.FormatFloat(tv.StartMSRun, 'f', 1, 64), " ms into the run.")
	if tv.Omitted != 0 {
		b.raw(" ")
		b.int(int64(tv.Omitted))
		b.raw(" more attempts of this key are not drawn (at most ")
		b.int(int64(tv.MaxAttempts))
		b.raw(").")
	}
	if tv.OmittedMarks != 0 {
		b.raw(" ")
		b.int(int64(tv.OmittedMarks))
		b.raw(" more faults or effects are not drawn.")
	}
	b.raw(" Hover a bar for its request, outcome and response.</p>\n<svg class=\"tl\" viewBox=\"0 0 1000 ")
	b.float(tv.Height)
	if len(tv.Trails) > 0 {
		b.enclose("\" role=\"img\" aria-label=\"timeline of intent ", tv.Intent, ", drawn with the table below\">\n<g class=\"axis\">")
	} else {
		b.enclose("\" role=\"img\" aria-label=\"timeline of key ", tv.Key, "\">\n<g class=\"axis\">")
	}
	for _, t := range tv.Ticks {
		b.raw("\n<line class=\"tick\"")
		b.attrNum("x1", t.X)
		b.attrNum("x2", t.X)
		b.attrNum("y1", tv.PlotTop)
		b.attrNum("y2", tv.PlotBot)
		b.raw("></line><text class=\"tick-label\"")
		b.attrNum("x", t.X)
		b.enclose(" y=\"12\">", t.Label, "</text>")
	}
	b.raw("\n</g>\n<g class=\"lanes\">")
	for _, l := range tv.LaneBox {
		b.raw("\n<rect class=\"lane")
		if l.Odd {
			b.raw(" odd")
		}
		b.raw("\" x=\"0\"")
		b.attrNum("y", l.Y)
		b.raw(" width=\"1000\"")
		b.attrNum("height", l.H)
		b.raw("></rect><text class=\"lane-label\" x=\"8\"")
		b.attrNum("y", l.TextY)
		b.enclose(">", l.Label, "</text>")
	}
	b.raw("\n<rect class=\"lane effects-lane\" x=\"0\"")
	b.attrNum("y", tv.EffectsY)
	b.raw(" width=\"1000\" height=\"30\"></rect><text class=\"lane-label\" x=\"8\"")
	b.attrNum("y", tv.EffectsLabelY)
	b.raw(">effects</text>\n</g>\n<g class=\"regions\">")
	for _, r := range tv.Regions {
		b.raw("\n<g class=\"region-g\"><rect class=\"region")
		if !r.Healed {
			b.raw(" unhealed")
		}
		b.raw("\"")
		b.attrNum("x", r.X)
		b.attrNum("y", tv.PlotTop)
		b.attrNum("width", r.W)
		b.attrNum("height", tv.RegionH)
		b.enclose("><title>", r.Tip, "</title></rect><text class=\"region-label\"")
		b.attrNum("x", r.X)
		b.attrNum("y", r.LabelY)
		b.enclose(">", r.Kind, "</text></g>")
	}
	b.raw("\n</g>\n<g class=\"bars\">")
	for i := range tv.Bars {
		bar := &tv.Bars[i]
		b.raw("\n<rect class=\"attempt ")
		b.text(bar.Class)
		if bar.Listed {
			b.raw(" listed")
		}
		if bar.Open {
			b.raw(" open")
		}
		b.raw("\" data-op=\"")
		b.int(bar.Op)
		b.raw("\"")
		b.attr("data-intent", bar.Intent)
		b.attrNum("x", bar.X)
		b.attrNum("y", bar.Y)
		b.attrNum("width", bar.W)
		b.attrNum("height", bar.H)
		b.enclose(" rx=\"2\"><title>", bar.Tip, "</title></rect>")
		if bar.Label != "" {
			b.raw("<text class=\"bar-label ")
			b.text(bar.Class)
			if bar.Open {
				b.raw(" open")
			}
			if bar.LabelOutside {
				b.raw(" outside")
			}
			b.raw("\"")
			b.attrNum("x", bar.LabelX)
			b.attrNum("y", bar.LabelY)
			b.enclose(">", bar.Label, "</text>")
		}
	}
	b.raw("\n</g>\n<g class=\"marks\">")
	for _, m := range tv.Marks {
		b.raw("\n<polygon class=\"fault-mark\"")
		b.attr("points", m.Points)
		b.enclose("><title>", m.Tip, "</title></polygon>")
		if m.Label != "" {
			b.raw("<text class=\"fault-label\"")
			b.attrNum("x", m.LabelX)
			b.attrNum("y", m.LabelY)
			b.enclose(">", m.Label, "</text>")
		}
	}
	for _, e := range tv.Effs {
		b.raw("\n<polygon class=\"effect\"")
		b.attr("points", e.Points)
		b.enclose("><title>", e.Tip, "</title></polygon>")
		if e.ShowLabel {
			b.raw("<text class=\"effect-label")
			if e.LabelEnd {
				b.raw(" end")
			}
			b.raw("\"")
			b.attrNum("x", e.LabelX)
			b.attrNum("y", e.LabelY)
			b.enclose(">", e.Label, "</text>")
		}
	}
	b.raw("\n</g>")
	if len(tv.Trails) > 0 {
		b.raw("\n<g class=\"client\">")
		for _, w := range tv.Waits {
			b.raw("\n<rect class=\"wait")
			if w.Short {
				b.raw(" short")
			}
			b.raw("\"")
			b.attrNum("x", w.X)
			b.attrNum("y", w.Y)
			b.attrNum("width", w.W)
			b.enclose(" height=\"3\"><title>", w.Tip, "</title></rect>")
		}
		for _, r := range tv.Rekeys {
			b.raw("\n<line class=\"rekey\"")
			b.attrNum("x1", r.X)
			b.attrNum("x2", r.X)
			b.attrNum("y1", r.Y1)
			b.attrNum("y2", r.Y2)
			b.enclose("><title>", r.Tip, "</title></line><text class=\"rekey-label\"")
			b.attrNum("x", r.X)
			b.attrNum("y", r.LabelY)
			b.raw(">new key</text>")
		}
		b.raw("\n</g>")
	}
	b.raw("\n</svg>", legend)
	if len(tv.Trails) > 0 {
		b.raw(legendClient)
	}
	b.raw("\n</ul>")
	for i := range tv.TrailViews {
		if i == 0 {
			b.raw("\n<h4 class=\"trails\">Intent by intent</h4>")
		}
		if i == tv.OpenTrails {
			b.raw("\n<details class=\"trails-more\"><summary>")
			b.int(int64(tv.MoreTrails))
			b.raw(" more intent", plural(tv.MoreTrails), "</summary>")
		}
		writeTrail(b, &tv.TrailViews[i])
	}
	if tv.MoreTrails != 0 {
		b.raw("\n</details>")
	}
	b.raw("\n</section>")
}

// writeTrail writes a client run's intent as a table: each attempt with
// its key (a changed key said in words), the gap before it against the
// Retry-After asked for, its answer and who gave it; the caption holds
// the client's belief next to the truth.
func writeTrail(b *htmlBuf, tv *trailView) {
	b.raw("\n<table class=\"trail\"")
	b.attr("data-intent", tv.Intent)
	b.enclose(">\n<caption>intent <code>", tv.Intent, "</code>")
	if tv.Tenant != "" {
		b.enclose(", tenant <code>", tv.Tenant, "</code>")
	}
	b.raw(": ")
	b.text(tv.Summary)
	b.enclose(". The client believed <strong>", tv.BeliefText, "</strong>; the upstream: <strong>")
	b.text(tv.TruthText)
	b.raw("</strong>")
	if tv.VerdictText != "" {
		b.enclose(" — <span class=\"verdict ", tv.Verdict, "\">")
		b.text(tv.VerdictText)
		b.raw("</span>")
	}
	b.raw(".</caption>\n<thead><tr><th class=\"num\">attempt</th><th class=\"num\">op</th><th>key</th><th class=\"num\">gap before</th><th class=\"num\">Retry-After asked</th><th>answer</th><th>answered by</th></tr></thead>\n<tbody>")
	for i := range tv.Rows {
		r := &tv.Rows[i]
		b.raw("\n<tr class=\"step")
		if r.Rekeyed {
			b.raw(" rekey")
		}
		b.raw("\"><td class=\"num\">")
		b.int(int64(r.Number))
		b.raw("</td><td class=\"num\">")
		b.int(r.Op)
		b.raw("</td><td>")
		if r.Rekeyed {
			b.raw("<strong class=\"break\">new key</strong> ")
		}
		b.enclose("<code>", r.Key, "</code>")
		if r.Rekeyed {
			b.enclose(" (was <code>", r.PrevKey, "</code>)")
		}
		b.enclose("</td><td class=\"num\">", r.Gap, "")
		if r.Short {
			b.raw(" <strong class=\"short\">shorter than asked</strong>")
		}
		b.enclose("</td><td class=\"num\">", r.Asked, "</td><td><span class=\"sw ")
		b.text(r.Class)
		b.enclose("\"></span>", r.Answer, "</td><td>")
		b.text(r.By)
		b.raw("</td></tr>")
	}
	b.raw("\n</tbody>\n</table>")
}

// writeHeader writes a timeline's heading and explanation, the same for a
// drawn one and a repeat.
func writeHeader(b *htmlBuf, tv *timelineView) {
	b.raw("\n<h3><span class=\"n\">#")
	b.int(int64(tv.N))
	b.enclose("</span> ", tv.Invariant, ":")
	if tv.Tenant != "" {
		b.enclose(" tenant <code>", tv.Tenant, "</code>,")
	}
	if tv.Method != "" || tv.Path != "" {
		b.enclose(" <code>", tv.Method, " ")
		b.text(tv.Path)
		b.raw("</code>,")
	}
	b.raw("\nkey <code>")
	if tv.Key != "" {
		b.text(tv.Key)
	} else {
		b.raw("(none)")
	}
	b.raw("</code>")
	if tv.Intent != "" {
		b.enclose(", intent <code>", tv.Intent, "</code>")
	}
	b.enclose("</h3>\n<p class=\"explanation\">", tv.Explanation, "</p>")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// legend explains a drawing's colours and symbols.
const legend = `
<ul class="legend">
<li><span class="sw s2xx"></span>ok 2xx</li>
<li><span class="sw s3xx"></span>ok 3xx</li>
<li><span class="sw s4xx"></span>ok 4xx (rejected)</li>
<li><span class="sw s5xx"></span>ok 5xx (server or gateway error)</li>
<li><span class="sw info"></span>info (indeterminate)</li>
<li><span class="sw info open"></span>open (never completed)</li>
<li><span class="sw fail"></span>fail (not delivered)</li>
<li><span class="sw listed"></span>named by the violation</li>
<li><span class="sw region"></span>fault active</li>
<li><span class="sym fault">▼</span>fault aimed at an attempt</li>
<li><span class="sym effect">◆</span>effect (as read by the oracle)</li>`

// legendClient adds a client run's marks to the legend.
const legendClient = `
<li><span class="sym rekey">┃</span>new key: the intent's key changed</li>
<li><span class="sw wait"></span>the wait a Retry-After asked for</li>
<li><span class="sw wait short"></span>retried sooner than asked</li>`
