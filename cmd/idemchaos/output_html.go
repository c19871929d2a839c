package main

import (
	"io"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
	"github.com/idemchaos/idemchaos/report/htmlpage"
)

// writeHTMLReport draws the HTML report; outcomes[i] is the run of rep.Runs[i].
func writeHTMLReport(w io.Writer, rep report.Report, outcomes []*harness.Outcome) error {
	hs := map[string]*history.History{}
	for i, o := range outcomes {
		if o != nil && o.History != nil && i < len(rep.Runs) {
			hs[htmlpage.HistoryKey(rep.Runs[i], i)] = o.History
		}
	}
	return htmlpage.Write(w, rep, htmlpage.Timelines(rep, hs))
}
