package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func (m *Main) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of idemchaos and of the history format",
		Example: "  idemchaos version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := "(devel)"
			if bi, ok := debug.ReadBuildInfo(); ok {
				v = bi.Main.Version
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v += " " + s.Value[:12]
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "idemchaos %s (history format v1)\n", v)
			return nil
		},
	}
}
