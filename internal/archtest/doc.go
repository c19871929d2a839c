// Package archtest holds the test that keeps the package graph the way
// ARCHITECTURE.md draws it: which package of the module may import which.
// It has no code of its own.
package archtest
