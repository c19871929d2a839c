package env

import "context"

// SetFindBinDir replaces the Postgres binary lookup and returns a restore
// function.
func SetFindBinDir(f func(context.Context) (string, error)) (restore func()) {
	old := findBinDir
	findBinDir = f
	return func() { findBinDir = old }
}
