package main

import (
	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/internal/dockerenv"
)

// imagesCmd is `idemchaos images build`: the docker environment's images,
// made locally for machines without a registry.
func (m *Main) imagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Local images for --env docker (no registry needed)",
	}
	var binDir string
	build := &cobra.Command{
		Use: "build",
		Example: `  idemchaos images build
  idemchaos run --env docker -s scenarios/crash-mid-request.yaml`,
		Short: "Build the Postgres, toxiproxy-server and reference images from this machine",
		Long: `Builds three minimal images through the Docker Engine API, without pulling anything:

  idemchaos/postgres:local    FROM scratch: this machine's Debian PostgreSQL server binaries,
                              the shared libraries they load (per ldd), /bin/sh and a postgres
                              user, with a cluster initialised at build time
  idemchaos/toxiproxy:local   FROM scratch: toxiproxy-server as a static Go binary
  idemchaos/reference:local   FROM scratch: this idemchaos binary (static), serving the
                              reference service ("idemchaos reference serve")

Each is also tagged with the hash of its contents, so a rebuild from the same inputs is
free. --env docker uses postgres:16 and ghcr.io/shopify/toxiproxy when they are present,
and these local images otherwise (or pass --pg-image / --toxiproxy-image); when neither
is present it builds the local ones itself first, saying so. The build's temporary
files (go build's work directory included) live in a run directory that the next
idemchaos command removes should the build be killed.
Building toxiproxy-server (and the reference, when this binary is not static) needs the
Go toolchain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := dockerenv.Connect(ctx)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if _, err := c.BuildImages(ctx, dockerenv.BuildOptions{PostgresBinDir: binDir, Log: cmd.OutOrStdout()}); err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			return nil
		},
	}
	build.Flags().StringVar(&binDir, "pg-bindir", "", "PostgreSQL server binaries to build the Postgres image from (default: found like --env local)")
	cmd.AddCommand(build)
	return cmd
}
