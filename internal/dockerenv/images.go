package dockerenv

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/idemchaos/idemchaos/internal/pgcluster"
)

// Default image names: the official images. Without a registry they are
// used only when already present locally; otherwise the locally built
// images ([LocalPostgres], [LocalToxiproxy]) stand in.
const (
	DefaultPostgresImage  = "postgres:16"
	DefaultToxiproxyImage = "ghcr.io/shopify/toxiproxy:2.12.0"
)

// Tags `idemchaos images build` gives the images it builds (each also has
// a tag of its content hash).
const (
	LocalPostgres  = "idemchaos/postgres:local"
	LocalToxiproxy = "idemchaos/toxiproxy:local"
	LocalReference = "idemchaos/reference:local"
)

// Images are the image references an environment uses.
type Images struct {
	Postgres  string
	Toxiproxy string
	Reference string
}

// BuildOptions configure [Client.BuildImages].
type BuildOptions struct {
	// PostgresBinDir holds the PostgreSQL server binaries; "" finds them
	// like the local environment does.
	PostgresBinDir string
	// Log, if set, gets one line per image.
	Log io.Writer
	_   struct{}
}

// BuildImages builds (or finds, by content hash) the three local images:
// Postgres from this machine's binaries, toxiproxy-server and the
// reference service as static binaries FROM scratch.
func (c *Client) BuildImages(ctx context.Context, opts BuildOptions) (Images, error) {
	var im Images
	var err error
	if im.Postgres, err = c.BuildPostgres(ctx, opts.PostgresBinDir); err != nil {
		return im, err
	}
	logf(opts.Log, "postgres   %s (also %s)\n", im.Postgres, LocalPostgres)
	if im.Toxiproxy, err = c.BuildToxiproxy(ctx); err != nil {
		return im, err
	}
	logf(opts.Log, "toxiproxy  %s (also %s)\n", im.Toxiproxy, LocalToxiproxy)
	if im.Reference, err = c.BuildReference(ctx); err != nil {
		return im, err
	}
	logf(opts.Log, "reference  %s (also %s)\n", im.Reference, LocalReference)
	return im, nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// build builds the context as image repo:<hash>, tags it localTag too, and
// returns repo:<hash>. An image with that tag already present is reused.
func (c *Client) build(ctx context.Context, role, repo, localTag string, b *buildContext) (string, error) {
	ref := repo + ":" + b.hash()[:16]
	if _, err := c.pool.Client.InspectImage(ref); err == nil {
		return ref, c.tag(ref, localTag)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(b.writeTar(pw)) }()
	var out bytes.Buffer
	err := c.pool.Client.BuildImage(dc.BuildImageOptions{
		Context: ctx, Name: ref, InputStream: pr, OutputStream: &out,
		RmTmpContainer: true, ForceRmTmpContainer: true, SuppressOutput: true,
		Labels: map[string]string{LabelImage: role, LabelHash: b.hash()},
	})
	_ = pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w: %s", ref, err, strings.TrimSpace(out.String()))
	}
	return ref, c.tag(ref, localTag)
}

func (c *Client) tag(ref, localTag string) error {
	if localTag == "" {
		return nil
	}
	repo, tag, _ := strings.Cut(localTag, ":")
	if err := c.pool.Client.TagImage(ref, dc.TagImageOptions{Repo: repo, Tag: tag, Force: true}); err != nil {
		return fmt.Errorf("tag %s as %s: %w", ref, localTag, err)
	}
	return nil
}

// BuildPostgres builds a Postgres image FROM scratch out of the server
// binaries in binDir ("" = found like the local environment), the
// version's lib and share trees, every shared library they load (per
// ldd), /bin/sh (initdb runs it) and a postgres user (uid 999).
func (c *Client) BuildPostgres(ctx context.Context, binDir string) (string, error) {
	return c.buildPostgres(ctx, binDir, LocalPostgres)
}

// buildPostgres is [Client.BuildPostgres] tagging localTag, whose
// repository names the image.
func (c *Client) buildPostgres(ctx context.Context, binDir, localTag string) (string, error) {
	if binDir == "" {
		d, err := pgcluster.FindBinDir(ctx)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoPostgres, err)
		}
		binDir = d
	}
	root := filepath.Dir(binDir) // /usr/lib/postgresql/15
	major := filepath.Base(root)
	share := filepath.Join("/usr/share/postgresql", major)
	if _, err := os.Stat(share); err != nil {
		return "", fmt.Errorf("%w: %s is not the Debian layout (no %s)", ErrNoPostgres, binDir, share)
	}
	b := newContext()
	bins := []string{"postgres", "initdb", "pg_ctl", "pg_basebackup", "pg_isready"}
	var elfs []string
	for _, n := range bins {
		p := filepath.Join(binDir, n)
		if err := b.addFile(strings.TrimPrefix(p, "/"), p, false); err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoPostgres, err)
		}
		elfs = append(elfs, p)
	}
	if err := b.addTree(strings.TrimPrefix(filepath.Join(root, "lib"), "/"), filepath.Join(root, "lib")); err != nil {
		return "", fmt.Errorf("postgres image: %w", err)
	}
	if err := b.addTree(strings.TrimPrefix(share, "/"), share); err != nil {
		return "", fmt.Errorf("postgres image: %w", err)
	}
	if err := b.addFile("bin/sh", "/bin/sh", false); err != nil {
		return "", fmt.Errorf("postgres image: %w", err)
	}
	elfs = append(elfs, "/bin/sh")
	libs, err := sharedLibs(ctx, elfs)
	if err != nil {
		return "", fmt.Errorf("postgres image: %w", err)
	}
	for _, l := range libs {
		if err := b.addFile(strings.TrimPrefix(l, "/"), l, false); err != nil {
			return "", fmt.Errorf("postgres image: %w", err)
		}
	}
	b.addData("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\npostgres:x:999:999:postgres:/var/lib/postgresql:/bin/sh\n"), 0o644)
	b.addData("etc/group", []byte("root:x:0:\npostgres:x:999:\n"), 0o644)
	b.addDir("tmp", 0o1777)
	b.addDir("var/run/postgresql", 0o1777)
	b.addDir(strings.TrimPrefix(pgTemplateDir, "/"), 0o1777)
	// initdb runs once, at build time: every container of the image starts
	// from this cluster instead of running initdb again (the local
	// environment keeps a template for the same reason).
	b.addData("Dockerfile", []byte("FROM scratch\nCOPY . /\nENV PATH="+binDir+":/bin\nUSER 999:999\n"+
		"RUN [\"initdb\", \"-D\", \""+pgTemplateDir+"/data\", \"-U\", \"postgres\", \"--auth=trust\", \"-E\", \"UTF8\", \"--locale=C\", \"--no-sync\"]\n"+
		"RUN printf 'host all all all trust\\nhost replication all all trust\\n' >> "+pgTemplateDir+"/data/pg_hba.conf\n"+
		"STOPSIGNAL SIGINT\n"), 0o644)
	return c.build(ctx, "postgres", repoOf(localTag), localTag, b)
}

// pgTemplateDir holds, in the local Postgres image, a cluster made by
// initdb at build time (data/); the primary runs on it directly.
const pgTemplateDir = "/pgtemplate"

var lddPath = regexp.MustCompile(`(/\S+)\s+\(0x`)

// sharedLibs lists the shared libraries ldd names for the binaries,
// including the dynamic loader.
func sharedLibs(ctx context.Context, bins []string) ([]string, error) {
	seen := map[string]bool{}
	var libs []string
	for _, b := range bins {
		out, err := exec.CommandContext(ctx, "ldd", b).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", b, err)
		}
		for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				libs = append(libs, m[1])
			}
		}
	}
	return libs, nil
}

// BuildToxiproxy builds toxiproxy-server (the Toxiproxy version this
// module uses) as a static binary in an image FROM scratch, laid out like
// the published image: ENTRYPOINT /toxiproxy.
func (c *Client) BuildToxiproxy(ctx context.Context) (string, error) {
	return c.buildToxiproxy(ctx, LocalToxiproxy)
}

// buildToxiproxy is [Client.BuildToxiproxy] tagging localTag, whose
// repository names the image.
func (c *Client) buildToxiproxy(ctx context.Context, localTag string) (string, error) {
	ref, err := withGoBinary(ctx, "github.com/Shopify/toxiproxy/v2/cmd/server", "toxiproxy", func(bin string) (string, error) {
		return c.BuildBinaryImage(ctx, "toxiproxy", repoOf(localTag), localTag, bin, []string{"-host=0.0.0.0"})
	})
	if err != nil {
		return "", fmt.Errorf("toxiproxy image: %w", err)
	}
	return ref, nil
}

// BuildReference builds the reference service's image: the idemchaos
// binary FROM scratch (`idemchaos reference serve`; the harness starts it
// as a child through IDEMCHAOS_CHILD). The running binary is used when it
// is static; otherwise it is built from this module's source.
func (c *Client) BuildReference(ctx context.Context) (string, error) {
	exe, err := os.Executable()
	if err == nil && isStatic(exe) && !strings.HasSuffix(exe, ".test") {
		return c.BuildBinaryImage(ctx, "reference", "idemchaos/reference", LocalReference, exe, []string{"reference", "serve"})
	}
	ref, err := withGoBinary(ctx, "github.com/idemchaos/idemchaos/cmd/idemchaos", "idemchaos", func(bin string) (string, error) {
		return c.BuildBinaryImage(ctx, "reference", "idemchaos/reference", LocalReference, bin, []string{"reference", "serve"})
	})
	if err != nil {
		return "", fmt.Errorf("reference image: the running binary is not static and %w", err)
	}
	return ref, nil
}

// BuildGoImage builds the Go main package pkg of this module (e.g.
// github.com/idemchaos/idemchaos/examples/ordersvc/cmd/ordersvc) as a
// static binary in an image FROM scratch tagged repo:<hash>.
func (c *Client) BuildGoImage(ctx context.Context, repo, pkg string) (string, error) {
	return withGoBinary(ctx, pkg, filepath.Base(pkg), func(bin string) (string, error) {
		return c.BuildBinaryImage(ctx, "service", repo, "", bin, nil)
	})
}

// BuildBinaryImage puts one static binary at /<name> in an image FROM
// scratch with it as the entrypoint.
func (c *Client) BuildBinaryImage(ctx context.Context, role, repo, localTag, bin string, cmd []string) (string, error) {
	if !isStatic(bin) {
		return "", fmt.Errorf("%s is not a static binary (build it with CGO_ENABLED=0)", bin)
	}
	name := filepath.Base(bin)
	b := newContext()
	if err := b.addFile(name, bin, true); err != nil {
		return "", err
	}
	b.addDir("tmp", 0o1777)
	df := fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n", name, name, name)
	if len(cmd) > 0 {
		df += "CMD [\"" + strings.Join(cmd, "\", \"") + "\"]\n"
	}
	b.addData("Dockerfile", []byte(df), 0o644)
	return c.build(ctx, role, repo, localTag, b)
}

// isStatic says whether an ELF file has no program interpreter.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
