package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/leftover"
)

// cleanupCmd is `idemchaos cleanup`: what runs killed outright left, on
// disk and in Docker, removed on request.
func (m *Main) cleanupCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "cleanup",
		Example: `  idemchaos cleanup`,
		Short:   "Remove what killed runs left: run directories, and docker runs' containers and networks",
		Long: `A run stops every process and removes its files when it ends, on an error and
on Ctrl-C, SIGTERM or SIGHUP. A run killed outright (SIGKILL, a crash) cannot:
its run directory (Postgres data, check --partitions' partition files, the go build
work directory of images build) is removed by the next idemchaos command of any kind,
and its containers by the next docker run.

cleanup does both now: it removes every run directory whose owner is dead, and
the containers and networks of docker runs whose harness is dead (when the Docker
daemon answers; without one there is nothing there to remove). Nothing of a
run still alive is touched.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{sweepsItself: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			got, err := leftover.Cleanup(cmd.Context())
			out := cmd.OutOrStdout()
			for _, d := range got.Dirs {
				fmt.Fprintf(out, "removed run directory %s\n", d)
			}
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("cleanup: %w", err)}
			}
			switch {
			case got.Docker != "":
				fmt.Fprintf(out, "docker: not swept: %s\n", got.Docker)
			case got.Containers+got.Networks > 0:
				fmt.Fprintf(out, "docker: removed %d containers and %d networks of dead runs\n", got.Containers, got.Networks)
			}
			if len(got.Dirs)+got.Containers+got.Networks == 0 {
				fmt.Fprintln(out, "nothing left by dead runs")
			}
			return nil
		},
	}
}
