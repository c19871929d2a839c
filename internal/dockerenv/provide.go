package dockerenv

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Catalog names, for the Postgres and Toxiproxy roles, the official image
// an environment prefers when the engine has it, and the local one it
// builds from this machine when neither is there.
type Catalog struct {
	// Official are the published images (pulled by nobody: no registry
	// is assumed).
	Official Images
	// Local are the tags the local builds get; each tag's repository also
	// names the build's content-hash tag.
	Local Images
}

// DefaultCatalog is postgres:16 and Shopify's toxiproxy, else
// idemchaos/postgres:local and idemchaos/toxiproxy:local.
var DefaultCatalog = Catalog{
	Official: Images{Postgres: DefaultPostgresImage, Toxiproxy: DefaultToxiproxyImage},
	Local:    Images{Postgres: LocalPostgres, Toxiproxy: LocalToxiproxy},
}

// ProvideImages fills the empty Postgres and Toxiproxy fields of want
// from cat: the official image when the engine has it, else the local one
// when it has that, else the local one built now from this machine (as
// `idemchaos images build` does: Postgres from the host's binaries,
// toxiproxy-server with the Go toolchain), with one line to opts.Log
// saying so and how long it took. Without a registry a pull could only
// fail; a build takes a minute once, then the images are on the engine.
// Fields set in want are kept as given.
func (c *Client) ProvideImages(ctx context.Context, want Images, cat Catalog, opts BuildOptions) (Images, error) {
	im, missing := c.resolve(want, cat)
	if len(missing) == 0 {
		return im, nil
	}
	t0 := time.Now()
	var err error
	if im.Postgres == "" {
		if _, err = c.buildPostgres(ctx, opts.PostgresBinDir, cat.Local.Postgres); err != nil {
			return im, fmt.Errorf("no Postgres image on the engine (%s or %s), and building one failed: %w", cat.Official.Postgres, cat.Local.Postgres, err)
		}
		im.Postgres = cat.Local.Postgres
	}
	if im.Toxiproxy == "" {
		if _, err = c.buildToxiproxy(ctx, cat.Local.Toxiproxy); err != nil {
			return im, fmt.Errorf("no Toxiproxy image on the engine (%s or %s), and building one failed: %w", cat.Official.Toxiproxy, cat.Local.Toxiproxy, err)
		}
		im.Toxiproxy = cat.Local.Toxiproxy
	}
	var looked, built []string
	for _, m := range missing {
		looked, built = append(looked, m.official, m.local), append(built, m.local)
	}
	logf(opts.Log, "docker: none of %s is on the engine: built %s from this machine in %s (as `idemchaos images build` does)\n",
		strings.Join(looked, ", "), strings.Join(built, " and "), time.Since(t0).Round(100*time.Millisecond))
	return im, nil
}

// absent is a role whose official and local images are both missing.
type absent struct{ official, local string }

// resolve fills the empty Postgres and Toxiproxy fields of want with the
// official image when present, else the local one when present; a role
// with neither stays empty and is returned in missing.
func (c *Client) resolve(want Images, cat Catalog) (im Images, missing []absent) {
	present := func(ref string) bool {
		_, err := c.pool.Client.InspectImage(ref)
		return err == nil
	}
	pick := func(field *string, official, local string) {
		switch {
		case *field != "":
		case present(official):
			*field = official
		case present(local):
			*field = local
		default:
			missing = append(missing, absent{official, local})
		}
	}
	pick(&want.Postgres, cat.Official.Postgres, cat.Local.Postgres)
	pick(&want.Toxiproxy, cat.Official.Toxiproxy, cat.Local.Toxiproxy)
	if want.Reference == "" {
		want.Reference = LocalReference
	}
	return want, missing
}

// repoOf is the repository of an image reference (its tag cut off).
func repoOf(ref string) string {
	repo, _ := splitImage(ref)
	return repo
}
