package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FindBinDir returns the directory holding initdb, postgres and
// pg_basebackup. It looks, in order, at PATH, at `pg_config --bindir`, and at
// /usr/lib/postgresql/*/bin (newest major version first). It returns
// [ErrNoBinaries] if none has all three.
func FindBinDir(ctx context.Context) (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, filepath.Dir(p))
	}
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.CommandContext(ctx, p, "--bindir").Output(); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(out)))
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(matches, func(a, b string) int { return majorOf(b) - majorOf(a) })
	candidates = append(candidates, matches...)
	for _, dir := range candidates {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

// majorOf extracts the major version from /usr/lib/postgresql/<major>/bin.
func majorOf(binDir string) int {
	n, err := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	if err != nil {
		return 0
	}
	return n
}

// hasServerBinaries reports whether dir has every binary this package runs.
func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres", "pg_basebackup"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}
