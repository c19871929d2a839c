package main

import "github.com/spf13/cobra"

// extraCmds lists the commands other packages contribute (reference, run, demo...).
func (m *Main) extraCmds() []*cobra.Command {
	return nil
}
