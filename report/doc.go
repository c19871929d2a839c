// Package report turns run outcomes into what people and CI systems read:
// a stable JSON shape ([Report]), a human summary ([WriteText]), JUnit XML
// ([WriteJUnit]) and a self-contained HTML page with a timeline per
// violating key ([WriteHTML]).
//
// The data is computed by pure functions ([FromOutcomes], [FromCheck],
// [Timelines]) and tested as data; the renderers only lay it out.
package report
