package htmlpage

import (
	"io"

	"github.com/idemchaos/idemchaos/report"
)

// WriteByTemplate writes the page as [Write] does, its run sections
// through their template (assets/run.tmpl) instead of by hand.
func WriteByTemplate(w io.Writer, rep report.Report, timelines []Timeline) error {
	return write(w, rep, timelines, false)
}
