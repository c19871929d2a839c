package report

import "io"

// WriteHTMLByTemplate writes the page as [WriteHTML] does, its run sections
// through their template (assets/run.tmpl) instead of by hand.
func WriteHTMLByTemplate(w io.Writer, rep Report, timelines []Timeline) error {
	return writeHTML(w, rep, timelines, false)
}
