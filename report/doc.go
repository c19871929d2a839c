// Package report turns run outcomes into what people and CI systems read:
// a stable JSON shape ([Report]), a human summary ([WriteText]) and JUnit
// XML ([WriteJUnit]). The HTML page, with a timeline per violating key, is
// the package report/htmlpage's.
//
// The data is computed by pure functions ([FromOutcome], [FromCheck])
// and tested as data; the renderers only lay it out.
package report
