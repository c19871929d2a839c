package dockerenv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
)

// An engine with neither the official nor the local images (names no
// other test uses, so the engine's own images cannot stand in) gets them
// built from this machine, with one line saying so and how long it took,
// instead of a failed pull; the environment then starts on them, and a
// second look finds them without building.
func TestProvideImages_BuildsWhatTheEngineLacks(t *testing.T) {
	c, _ := images(t)
	ctx := context.Background()
	u := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	repo := "idemchaos-provide-" + u
	cat := dockerenv.Catalog{
		Official: dockerenv.Images{Postgres: "idemchaos-absent-" + u + "/postgres:16", Toxiproxy: "idemchaos-absent-" + u + "/toxiproxy:2"},
		Local:    dockerenv.Images{Postgres: repo + "/postgres:local", Toxiproxy: repo + "/toxiproxy:local"},
	}
	t.Cleanup(func() { removeRepo(t, c, repo) })
	for _, ref := range []string{cat.Official.Postgres, cat.Official.Toxiproxy, cat.Local.Postgres, cat.Local.Toxiproxy} {
		_, err := c.API().InspectImage(ref)
		require.Error(t, err, "%s must be absent for the test to mean anything", ref)
	}

	var log bytes.Buffer
	t0 := time.Now()
	im, err := c.ProvideImages(ctx, dockerenv.Images{}, cat, dockerenv.BuildOptions{Log: &log})
	require.NoError(t, err)
	t.Logf("built both images in %s: %s", time.Since(t0).Round(time.Millisecond), strings.TrimSpace(log.String()))
	assert.Equal(t, cat.Local.Postgres, im.Postgres)
	assert.Equal(t, cat.Local.Toxiproxy, im.Toxiproxy)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 1, "one line: %q", log.String())
	for _, s := range []string{cat.Official.Postgres, cat.Local.Postgres, cat.Official.Toxiproxy, cat.Local.Toxiproxy, "images build"} {
		assert.Contains(t, lines[0], s)
	}
	assert.Regexp(t, regexp.MustCompile(` in \d+(\.\d)?(m\d+(\.\d)?)?s `), lines[0], "the time it took")
	for role, ref := range map[string]string{"postgres": im.Postgres, "toxiproxy": im.Toxiproxy} {
		img, err := c.API().InspectImage(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, role, img.Config.Labels[dockerenv.LabelImage], ref)
	}

	// The environment starts on what was built.
	e, err := c.Start(ctx, dockerenv.Config{Images: im})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	addr, err := e.Proxies().CreateProxy(ctx, "pg", "", e.Primary().NetAddr(5432))
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	require.NoError(t, err)
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one))
	_ = conn.Close(ctx)

	log.Reset()
	again, err := c.ProvideImages(ctx, dockerenv.Images{}, cat, dockerenv.BuildOptions{Log: &log})
	require.NoError(t, err)
	assert.Equal(t, im, again)
	assert.Empty(t, log.String(), "present images are not built again")
}

// removeRepo removes every image of repo (its local and content-hash tags).
func removeRepo(t *testing.T, c *dockerenv.Client, repo string) {
	imgs, err := c.API().ListImages(dc.ListImagesOptions{Filters: map[string][]string{"reference": {repo + "/*"}}})
	if err != nil {
		t.Errorf("list %s images: %v", repo, err)
		return
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if err := c.API().RemoveImageExtended(tag, dc.RemoveImageOptions{Force: true}); err != nil {
				t.Errorf("remove %s: %v", tag, err)
			}
		}
	}
	left, _ := c.API().ListImages(dc.ListImagesOptions{Filters: map[string][]string{"reference": {repo + "/*"}}})
	if len(left) > 0 {
		t.Errorf("images of %s left: %v", repo, left)
	}
}
