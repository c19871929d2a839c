// Package modtidy holds only a test: it fails when `go mod tidy` would
// change go.mod or go.sum, so a requirement marked indirect that is used
// directly, or a stale go.sum line, cannot land. Several branches edit
// go.mod; this keeps their merges honest.
package modtidy
