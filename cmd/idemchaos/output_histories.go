package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemchaos/idemchaos/harness"
	"github.com/idemchaos/idemchaos/report"
)

// Every run writes its history, since a failure is worth nothing without
// it, to ./idemchaos-histories/ under the working directory (or
// IDEMCHAOS_HISTORIES): the project's own, never a directory every user of
// the machine shares. A history of a run that failed stays there until the
// user removes it; one of a run that passed moves to passed/, which keeps
// the newest few (IDEMCHAOS_KEEP_HISTORIES, default 20), so that a demo a
// day does not fill the disk. Pruning reads that passed/ alone, and only
// history files: no other directory is ever reached. Reports name the
// histories by their path relative to the working directory (the HTML
// report: to its own directory, as links).

// defaultKeepHistories is how many histories of passed runs are kept.
const defaultKeepHistories = 20

// keepHistoriesEnv names the variable that overrides it.
const keepHistoriesEnv = "IDEMCHAOS_KEEP_HISTORIES"

// historiesEnv names the variable that moves the histories' directory.
const historiesEnv = "IDEMCHAOS_HISTORIES"

// historyDirFor is where runs write their histories: IDEMCHAOS_HISTORIES,
// else idemchaos-histories under the working directory (absolute, so that
// a history's path stays valid whatever the run does next).
func historyDirFor(string) string {
	dir := os.Getenv(historiesEnv)
	if dir == "" {
		dir = "idemchaos-histories"
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// relativeTo is p relative to the directory base when p lies under it (a
// path that survives moving the project), else p as it is.
func relativeTo(base, p string) string {
	if r := linkFrom(base, p); r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return r
	}
	return p
}

// linkFrom is p relative to the directory base, "../" included: how a page
// in base links to it. p stays as it is when no relative path exists.
func linkFrom(base, p string) string {
	if p == "" {
		return p
	}
	ap, err1 := filepath.Abs(p)
	ab, err2 := filepath.Abs(base)
	if err1 != nil || err2 != nil {
		return p
	}
	r, err := filepath.Rel(ab, ap)
	if err != nil {
		return p
	}
	return r
}

// passedDir is where the histories of runs that passed go.
func passedDir() string { return filepath.Join(historyDirFor(""), "passed") }

// keepHistories reads IDEMCHAOS_KEEP_HISTORIES.
func keepPassed() (int, error) {
	v, ok := os.LookupEnv(keepHistoriesEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return defaultKeepHistories, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of histories, 0 or more", keepHistoriesEnv, v)
	}
	return n, nil
}

// settlePassed moves the history of each run that passed (met[i]) out of
// the history dir into passed/, and points outcomes[i] (and runs[i], when
// given) at the new path. A history elsewhere (a --history file, or one
// already moved) stays where it is.
func settlePassed(outcomes []*harness.Outcome, met []bool, runs []report.Run) {
	top := historyDirFor("")
	for i, o := range outcomes {
		if o == nil || o.HistoryPath == "" || !met[i] || filepath.Dir(o.HistoryPath) != top {
			continue
		}
		if err := os.MkdirAll(passedDir(), 0o755); err != nil {
			return
		}
		to := filepath.Join(passedDir(), filepath.Base(o.HistoryPath))
		if os.Rename(o.HistoryPath, to) != nil {
			continue // it stays with the failures: kept, never lost
		}
		if i < len(runs) && runs[i].History == o.HistoryPath {
			runs[i].History = to
		}
		o.HistoryPath = to
	}
}

// prunePassed removes the oldest histories in passed/ beyond keep, never
// one of this command's (mine), so that every path a report names exists.
func prunePassed(keep int, mine []*harness.Outcome) {
	entries, err := os.ReadDir(passedDir())
	if err != nil {
		return
	}
	own := map[string]bool{}
	for _, o := range mine {
		if o != nil {
			own[filepath.Base(o.HistoryPath)] = true
		}
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{e.Name(), info.ModTime()})
	}
	slices.SortFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) }) // newest first
	kept := 0
	for _, f := range files {
		if own[f.name] || kept < keep {
			kept++
			continue
		}
		os.Remove(filepath.Join(passedDir(), f.name))
	}
}
