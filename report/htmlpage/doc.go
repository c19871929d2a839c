// Package htmlpage draws a [report.Report] as one self-contained HTML page
// ([Write]): the verdict, the catch matrix, a section per run and, for each
// violating key, its timeline as inline SVG ([Timelines]), a failure
// repeated across runs drawn once ([Signature], [TimelineRuns]).
//
// It lives beside report, not in it, so that the report model a library
// user reads stays small: the page is the CLI's (`--report FILE.html` of
// run, check and merge), its markup, script and stylesheet most of the lines.
package htmlpage
