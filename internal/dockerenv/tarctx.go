package dockerenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// buildContext is a Docker build context assembled in memory as a list of
// entries, streamed as a tar at build time. Its hash names the image, so
// the same inputs are never built twice.
type buildContext struct {
	entries map[string]entry // tar path (no leading /) → what to write
}

type entry struct {
	src  string // host file to copy (symlinks followed), or ""
	data []byte // literal contents when src is ""
	dir  bool
	mode int64
	// sum identifies src cheaply: size and mtime for installed files,
	// content for built binaries.
	sum string
}

func newContext() *buildContext { return &buildContext{entries: map[string]entry{}} }

// addData adds a literal file.
func (b *buildContext) addData(name string, data []byte, mode int64) {
	b.parents(name)
	b.entries[name] = entry{data: data, mode: mode, sum: hashBytes(data)}
}

// addDir adds a directory.
func (b *buildContext) addDir(name string, mode int64) {
	b.parents(name)
	b.entries[name] = entry{dir: true, mode: mode}
}

// addFile adds a host file at name, following symlinks (the image gets the
// file's contents under the link's path, as `cp -L` would). byContent
// hashes the contents; otherwise size and mtime stand for them.
func (b *buildContext) addFile(name, src string, byContent bool) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	sum := fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
	if byContent {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		sum = hashBytes(data)
	}
	b.parents(name)
	b.entries[name] = entry{src: src, mode: int64(st.Mode().Perm()), sum: sum}
	return nil
}

// addTree adds every regular file under the host directory src at name.
func (b *buildContext) addTree(name, src string) error {
	return walk(src, func(rel string, isDir bool) error {
		if isDir {
			b.addDir(path.Join(name, rel), 0o755)
			return nil
		}
		return b.addFile(path.Join(name, rel), src+"/"+rel, false)
	})
}

func (b *buildContext) parents(name string) {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := b.entries[d]; !ok {
			b.entries[d] = entry{dir: true, mode: 0o755}
		}
	}
}

func (b *buildContext) names() []string {
	names := make([]string, 0, len(b.entries))
	for n := range b.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// hash is a content hash over every entry's path, mode and sum.
func (b *buildContext) hash() string {
	h := sha256.New()
	for _, n := range b.names() {
		e := b.entries[n]
		fmt.Fprintf(h, "%s\x00%t\x00%o\x00%s\n", n, e.dir, e.mode, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeTar streams the context as a tar.
func (b *buildContext) writeTar(w io.Writer) error {
	tw := tar.NewWriter(w)
	mtime := time.Unix(0, 0)
	for _, n := range b.names() {
		e := b.entries[n]
		if e.dir {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n + "/", Mode: e.mode, ModTime: mtime}); err != nil {
				return err
			}
			continue
		}
		if e.src == "" {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: e.mode, Size: int64(len(e.data)), ModTime: mtime}); err != nil {
				return err
			}
			if _, err := io.Copy(tw, bytes.NewReader(e.data)); err != nil {
				return err
			}
			continue
		}
		if err := copyFileInto(tw, n, e); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFileInto(tw *tar.Writer, name string, e entry) error {
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: e.mode, Size: st.Size(), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// walk calls fn for every directory and regular file under root, with
// paths relative to root; symlinks to files count as files.
func walk(root string, fn func(rel string, isDir bool) error) error {
	var visit func(rel string) error
	visit = func(rel string) error {
		des, err := os.ReadDir(root + "/" + rel)
		if err != nil {
			return err
		}
		for _, de := range des {
			r := strings.TrimPrefix(rel+"/"+de.Name(), "/")
			st, err := os.Stat(root + "/" + r)
			if err != nil {
				continue // a dangling link: nothing to copy
			}
			if st.IsDir() {
				if err := fn(r, true); err != nil {
					return err
				}
				if err := visit(r); err != nil {
					return err
				}
				continue
			}
			if st.Mode().IsRegular() {
				if err := fn(r, false); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return visit("")
}
