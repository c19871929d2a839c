package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/idemchaos/idemchaos/harness"
)

// keepCutShort is --history for a command cut short (a signal, an error
// in the middle): the histories of the runs that finished and the partial
// one of the run cut short go where the user asked for them, as they
// would have had the command ended — the file itself for one run, files
// in the directory for several (many). It returns where the partial
// history is now (where the run wrote it, without --history), and why it
// could not be copied.
func (o *outputFlags) keepCutShort(finished []*harness.Outcome, partial string, many bool) (string, error) {
	if o.history == "" || partial == "" {
		return partial, nil
	}
	if !many {
		if err := copyFile(partial, o.history); err != nil {
			return partial, fmt.Errorf("--history %s: %w", o.history, err)
		}
		return o.history, nil
	}
	if err := os.MkdirAll(o.history, 0o755); err != nil {
		return partial, fmt.Errorf("--history %s: %w", o.history, err)
	}
	for _, f := range finished {
		if f == nil || f.HistoryPath == "" {
			continue
		}
		if err := copyFile(f.HistoryPath, filepath.Join(o.history, filepath.Base(f.HistoryPath))); err != nil {
			return partial, fmt.Errorf("--history %s: %w", o.history, err)
		}
	}
	dst := filepath.Join(o.history, filepath.Base(partial))
	if err := copyFile(partial, dst); err != nil {
		return partial, fmt.Errorf("--history %s: %w", o.history, err)
	}
	return dst, nil
}

// reportCutShort prints where the partial history of a command cut short
// is, after keepCutShort put it where --history asked.
func (o *outputFlags) reportCutShort(errw io.Writer, label string, finished []*harness.Outcome, partial string, many bool) {
	path, err := o.keepCutShort(finished, partial, many)
	if err != nil {
		fmt.Fprintf(errw, "%s: %s (%v)\n", label, path, err)
		return
	}
	fmt.Fprintf(errw, "%s: %s\n", label, path)
}

// copyFile copies src to dst through a temporary file in dst's directory
// renamed into place, so that dst is never a truncated copy: a signal or
// a full disk during the copy leaves dst as it was.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
