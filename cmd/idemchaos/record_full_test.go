package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemchaos/idemchaos/history"
)

// smallTmpfs mounts a tmpfs of size bytes for the test: a disk that
// really fills. Mounting needs root.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// With its history on a disk that fills up, record stops at the first
// failed write (exit 3, one line naming the cause), forwards nothing it
// could not record, and its summary counts the attempts the file holds —
// not the requests it proxied. The file ends on a whole line.
func TestRecord_FullDiskStopsAndCountsWhatWasWritten(t *testing.T) {
	disk := smallTmpfs(t, "64k")
	var hits atomic.Int64
	up := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"`+strings.Repeat("x", 200)+`"}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	hist := filepath.Join(disk, "h.jsonl")
	proxyURL, interrupt, wait := recordingParts(t, "http://"+ln.Addr().String(), hist, "--tenant-header", "X-Tenant")
	defer interrupt()

	// Eight clients at once until the recorder turns them away (bounded:
	// 64 KiB holds a few hundred events): some requests are in flight
	// when the disk fills.
	client := &http.Client{Timeout: 10 * time.Second}
	var sent, refused atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Load() < 5000 && refused.Load() == 0 {
				n := sent.Add(1)
				req, _ := http.NewRequest(http.MethodPost, proxyURL+"/orders", strings.NewReader(`{"sku":"A","qty":1}`))
				req.Header.Set("X-Tenant", "acme")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d", n))
				resp, err := client.Do(req)
				if err != nil {
					refused.Add(1) // record already shut its listener
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if refused.Load() == 0 {
		t.Fatalf("%d requests through record onto a 64 KiB disk, none refused", sent.Load())
	}
	code, stderr := wait()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != ExitUsage || !strings.HasPrefix(last, "idemchaos: record: stopped") || !strings.Contains(last, "no space left on device") {
		t.Fatalf("exit %d, want 3 with one line naming the full disk; stderr:\n%s", code, stderr)
	}

	f, err := os.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.Load(f, history.LoadOptions{})
	if err != nil || h.Truncated {
		t.Fatalf("the history must end on a whole line: %v, truncated %v", err, h != nil && h.Truncated)
	}
	done := 0
	for i := range h.Attempts {
		if h.Attempts[i].Done() {
			done++
		}
	}
	m := regexp.MustCompile(`history \S+: (\d+) attempts`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary; stderr:\n%s", stderr)
	}
	if n, _ := strconv.Atoi(m[1]); n != done || done == 0 {
		t.Fatalf("summary says %d attempts, the file holds %d with an outcome; stderr:\n%s", n, done, stderr)
	}
	if lost := len(h.Attempts) - done; lost > 0 && !strings.Contains(stderr, fmt.Sprintf("%d more were forwarded", lost)) {
		t.Fatalf("%d forwarded attempts have no outcome in the file, and the summary does not say so; stderr:\n%s", lost, stderr)
	}
	// Nothing reached the upstream that the history does not know of.
	if got := int(hits.Load()); got != len(h.Attempts) {
		t.Fatalf("the upstream got %d requests, the history has %d invokes", got, len(h.Attempts))
	}
	t.Logf("%d requests sent, %d forwarded and recorded, %d with their outcome; interrupted %q", sent.Load(), hits.Load(), done, h.Interrupted)
}
