package main

import "github.com/spf13/cobra"

// extraCmds lists the commands beyond check and version.
func (m *Main) extraCmds() []*cobra.Command {
	return []*cobra.Command{m.demoCmd(), m.benchCmd(), m.runCmd(), m.planCmd(), m.validateCmd(), m.mergeCmd(), newReferenceCmd(), m.initCmd(), m.recordCmd(), m.imagesCmd(), m.cleanupCmd()}
}
