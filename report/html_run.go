package report

import (
	"bytes"
	"strconv"
	"strings"
)

// A report of a seed sweep has hundreds of run sections, each with its
// facts and a row per invariant, and a row per repeated violation: through
// html/template (reflection for every field, every call) they were most of
// the merge's CPU. They are written here by hand instead, byte for byte
// what the template wrote, with every string from a report going through
// esc: the escaping html/template applies in text and in quoted attribute
// values. Nothing here writes a URL, a script or a style from data. The
// drawn timelines (a few per page) stay in the template.

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

func (b *htmlBuf) int(n int64) { b.WriteString(strconv.FormatInt(n, 10)) }

// writeRun writes one run's section; drawn timelines come from the
// template's "timeline" (drawn).
func writeRun(b *htmlBuf, rv *runView, drawn func(*htmlBuf, *timelineView) error) error {
	b.raw("\n<section class=\"run\" id=\"run-")
	b.int(int64(rv.Index))
	b.raw("\">")
	if rv.Fold {
		b.raw("<details><summary>")
	}
	b.raw("\n<h2><span class=\"badge ")
	b.text(rv.Status)
	b.raw("\">")
	b.text(strings.ToUpper(rv.Status))
	b.raw("</span> ")
	b.text(runLabel(rv.Run))
	b.raw("</h2>")
	if rv.Fold {
		b.raw("</summary>")
	}
	b.raw("\n<dl class=\"facts\">\n<dt>scenario</dt><dd>")
	b.text(dash(rv.Scenario))
	b.raw("</dd>")
	if rv.File != "" {
		b.raw("<dt>file</dt><dd><code>")
		b.text(rv.File)
		b.raw("</code></dd>")
	}
	if rv.Mutant != "" {
		b.raw("<dt>mutant</dt><dd><code>")
		b.text(rv.Mutant)
		b.raw("</code></dd>")
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
		b.raw("<dt>reproducibility</dt><dd>")
		b.text(rv.Repro)
		b.raw("</dd>")
	}
	if rv.History != "" {
		b.raw("<dt>history</dt><dd><code>")
		b.text(rv.History)
		b.raw("</code></dd>")
	}
	if rv.Replay != "" {
		b.raw("<dt>replay</dt><dd><code class=\"cmd\">")
		b.text(rv.Replay)
		b.raw("</code></dd>")
	}
	b.raw("\n</dl>")
	if rv.Error != "" {
		b.raw("\n<p class=\"error\">error: ")
		b.text(rv.Error)
		b.raw("</p>")
	}
	for i := range rv.Timelines {
		tv := &rv.Timelines[i]
		if !tv.Repeat {
			if err := drawn(b, tv); err != nil {
				return err
			}
			continue
		}
		writeRepeat(b, tv)
	}
	if len(rv.Undrawn) > 0 {
		b.raw("\n<section class=\"undrawn\">\n<h3>Violations without a timeline</h3>\n<ol>")
		for _, u := range rv.Undrawn {
			b.raw("\n<li><strong>")
			b.text(u.Invariant)
			b.raw("</strong>")
			if u.Tenant != "" {
				b.raw(", tenant <code>")
				b.text(u.Tenant)
				b.raw("</code>")
			}
			if u.Key != "" {
				b.raw(", key <code>")
				b.text(u.Key)
				b.raw("</code>")
			}
			if len(u.Ops) > 0 {
				b.raw(", ops ")
				b.text(joinOps(u.Ops))
			}
			b.raw(": ")
			b.text(u.Explanation)
			if u.Cause != "" {
				b.raw(" <em>Likely cause: ")
				b.text(u.Cause)
				b.raw(".</em>")
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
			b.text(dash(iv.Step))
			if iv.Expect != "" && iv.Expect != "clean" {
				b.raw(" <span class=\"muted\">(expects ")
				b.text(iv.Expect)
				b.raw(")</span>")
			}
			b.raw("</td>\n<td>")
			b.text(iv.Name)
			if iv.Expected {
				b.raw(" <span class=\"muted\">expected</span>")
			}
			b.raw("</td>\n<td><span class=\"badge ")
			b.text(iv.Verdict)
			b.raw("\">")
			b.text(strings.ToUpper(iv.Verdict))
			b.raw("</span></td><td class=\"num\">")
			b.int(int64(iv.Checked))
			b.raw("</td><td class=\"num\">")
			b.int(int64(len(iv.Violations)))
			b.raw("</td><td>")
			b.text(iv.Reason)
			b.raw("</td></tr>")
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
		b.raw(" runs: minimal plan</summary><pre>")
		b.text(s.Plan)
		b.raw("</pre></details>")
	}
	if rv.Fold {
		b.raw("</details>")
	}
	b.raw("\n</section>")
	return nil
}

// writeRepeat writes a violation whose failure is drawn in another run:
// its header and explanation, the timeline that shows it and the file
// that holds this run's history.
func writeRepeat(b *htmlBuf, tv *timelineView) {
	b.raw("\n<section class=\"timeline repeat\" id=\"")
	b.text(tv.ID)
	b.raw("\" data-key=\"")
	b.text(tv.Key)
	b.raw("\" data-tenant=\"")
	b.text(tv.Tenant)
	b.raw("\" data-invariant=\"")
	b.text(tv.Invariant)
	b.raw("\">\n<h3><span class=\"n\">#")
	b.int(int64(tv.N))
	b.raw("</span> ")
	b.text(tv.Invariant)
	b.raw(":")
	if tv.Tenant != "" {
		b.raw(" tenant <code>")
		b.text(tv.Tenant)
		b.raw("</code>,")
	}
	if tv.Method != "" || tv.Path != "" {
		b.raw(" <code>")
		b.text(tv.Method)
		b.raw(" ")
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
		b.raw(", intent <code>")
		b.text(tv.Intent)
		b.raw("</code>")
	}
	b.raw("</h3>\n<p class=\"explanation\">")
	b.text(tv.Explanation)
	b.raw("</p>\n<p class=\"muted\">Ops ")
	b.text(joinOps(tv.Ops))
	b.raw(". Not drawn: the same failure as")
	if tv.LikeID != "" {
		b.raw(" <a href=\"#")
		b.text(tv.LikeID)
		b.raw("\">#")
		b.int(int64(tv.LikeN))
		b.raw("</a> (")
		b.text(tv.LikeRun)
		b.raw("), whose timeline shows it")
	} else {
		b.raw(" another run's")
	}
	b.raw(".")
	if tv.History != "" {
		b.raw(" This run's history: <code>")
		b.text(tv.History)
		b.raw("</code>.")
	}
	b.raw("</p>\n</section>")
}
