// Package archtest holds the tests that keep the house the way its pages
// draw it: the package graph as ARCHITECTURE.md's table says (which package
// of the module may import which), README.md a front door of at most 400
// lines, and every relative link of README.md and docs/*.md resolving to a
// file and heading that exist. It has no code of its own.
package archtest
