package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/idemchaos/idemchaos/harness/internal/sut"
	"github.com/idemchaos/idemchaos/history"
)

// An environment error is a fact of the run, written into its history as
// an environment event so that checkers.Judge, in this run and in any later
// check of the file, calls the run an environment error (exit 3) and never
// a violation: the harness could not do its job.

// environmentError is err said as the environment's failure, in one line
// (see environmentCause), still wrapping err; nil, a cancellation and an
// error already said so stay as they are.
func (r *Runner) environmentError(ctx context.Context, err error) error {
	var done *envError
	if err == nil || ctx.Err() != nil || errors.As(err, &done) {
		return err
	}
	return &envError{cause: r.environmentCause(err), err: err}
}

// envError is an error of the environment with its cause in one line.
type envError struct {
	cause string
	err   error
}

func (e *envError) Error() string { return e.cause }
func (e *envError) Unwrap() error { return e.err }

// environmentCause says in one line why the run could not go on: the
// harness's own database died, the disk filled, or err as it is.
func (r *Runner) environmentCause(err error) string {
	msg := strings.TrimPrefix(oneLine(err.Error()), ErrSetup.Error()+": ")
	if d, ok := r.env.(sut.HarnessDatabase); ok {
		if died := d.DatabaseDied(); died != nil {
			return fmt.Sprintf("the harness's database died (%v): %s", died, msg)
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return "the disk is full: " + msg
	}
	return msg
}

// oneLine joins the lines of a multi-line message (pgconn lists every
// address it tried, one per line).
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// environment writes an environment event with the cause to the history.
// When the history cannot be written (a full disk), it cuts the file back
// to a whole line, which frees the space of the torn one (and of as many
// lines before it as the event needs), and writes the event there: the
// events it drops would be judged by nobody, the environment error
// outranking them all.
func (s *session) environment(cause string) {
	e := &history.Event{Type: history.TypeEnvironment, Error: cause}
	if s.rec.Write(e) == nil && s.rec.Flush() == nil {
		return
	}
	_ = appendAtLineEnd(s.f, append(history.AppendEvent(nil, e), '\n'))
}

// appendAtLineEnd writes line after the last whole line of f, truncating
// what follows; while the disk has no room for it, it gives up further
// lines (never the first, the meta event).
func appendAtLineEnd(f *os.File, line []byte) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	for range 64 {
		cut, err := lineEndBefore(f, end)
		if err != nil {
			return err
		}
		if err := f.Truncate(cut); err != nil {
			return err
		}
		_, err = f.WriteAt(line, cut)
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			return err
		}
		end = cut - int64(len(line)) - 4096 // free at least a block more
	}
	return errors.New("no room for the environment event")
}

// lineEndBefore returns the offset just past the last newline of f before
// end that is not the first line's (the meta event stays).
func lineEndBefore(f *os.File, end int64) (int64, error) {
	first, err := firstLineEnd(f)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	for end > first {
		from := max(first, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-from], from)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return from + int64(i) + 1, nil
		}
		end = from
	}
	return first, nil
}

// firstLineEnd returns the offset just past the first line of f.
func firstLineEnd(f *os.File) (int64, error) {
	buf := make([]byte, 4096)
	for off := int64(0); ; off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		if err != nil {
			return off + int64(n), nil
		}
	}
}

// judged loads the history a run wrote for its verdict. A run whose target
// answered none of its attempts is an environment error — the target was
// never reachable in the way the run addressed it — and the history says
// so first.
func (s *session) judged() (*history.History, error) {
	if err := s.rec.Flush(); err != nil {
		return nil, err
	}
	h, err := loadHistory(s.path, s.load)
	if err != nil || h.Environment != "" {
		return h, err
	}
	if why := unanswered(h); why != "" {
		s.environment(why)
		h.Environment = why // as a load of the file now reads it
	}
	return h, nil
}

// unanswered explains a history in which the target answered none of the
// attempts, or returns "". A service that answered some attempts and then
// stopped is judged (eventually-decided): this is only the run that never
// reached it.
func unanswered(h *history.History) string {
	if len(h.Attempts) == 0 {
		return ""
	}
	byError := map[string]int{}
	for i := range h.Attempts {
		a := &h.Attempts[i]
		if a.Outcome == history.OK && !tlsPortRefusal(a) {
			return ""
		}
		if a.Outcome == history.OK {
			byError[fmt.Sprintf("%d: %s", a.Status, plainToTLS)]++
			continue
		}
		byError[a.Outcome.String()+": "+a.Error]++
	}
	errs := make([]string, 0, len(byError))
	for e := range byError {
		errs = append(errs, e)
	}
	sort.Slice(errs, func(i, j int) bool {
		if byError[errs[i]] != byError[errs[j]] {
			return byError[errs[i]] > byError[errs[j]]
		}
		return errs[i] < errs[j]
	})
	most := errs[0]
	why := fmt.Sprintf("the target answered none of the run's %d attempts (%d× %s", len(h.Attempts), byError[most], most)
	if len(errs) > 1 {
		why += fmt.Sprintf(", and %d other errors", len(h.Attempts)-byError[most])
	}
	return why + "): " + noAnswerHint(most)
}

// plainToTLS names the answer a TLS port gives a plain HTTP request.
const plainToTLS = "a TLS port refusing plain HTTP"

// tlsPortRefusal says an answer came from a TLS server's front door, not
// from the service: Go's servers and nginx answer a plain HTTP request to a
// TLS port with a 400 of their own, before any handler runs.
func tlsPortRefusal(a *history.Attempt) bool {
	return a.Status == http.StatusBadRequest &&
		(strings.Contains(a.RespPreview, "HTTP request to an HTTPS server") ||
			strings.Contains(a.RespPreview, "plain HTTP request was sent to HTTPS port"))
}

// noAnswerHint says what an attempt's error points at.
func noAnswerHint(err string) string {
	switch {
	case strings.Contains(err, plainToTLS):
		return "the target speaks TLS to an http:// URL: use https://"
	case strings.Contains(err, "first record does not look like a TLS handshake"),
		strings.Contains(err, "server gave HTTP response to HTTPS client"):
		return "the target speaks plain HTTP to an https:// URL: use http://"
	case strings.Contains(err, "tls:"), strings.Contains(err, "x509:"):
		return "the TLS handshake failed: check the URL's scheme and the certificate"
	case strings.Contains(err, "connection refused"):
		return "nothing listens there: is the service running?"
	case strings.Contains(err, "timeout"):
		return "it took the connections but answered nothing in time: is it stuck, or its listen backlog full?"
	}
	return "is the service running, and at this address?"
}
