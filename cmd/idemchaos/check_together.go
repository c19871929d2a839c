package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/checkers"
	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/together"
	"github.com/idemchaos/idemchaos/history"
	"github.com/idemchaos/idemchaos/report"
)

// checkTogether judges files, the histories of several drivers against one
// service, as one history (see internal/together for what is compared
// across files and what only within one).
func checkTogether(cmd *cobra.Command, f checkFlags, files []string) (report.Run, error) {
	var contract checkers.Contract
	var names []string
	hs := make([]*history.History, len(files))
	for i, name := range files {
		c, ns, err := contractOf(name, f)
		if err != nil {
			return report.Run{}, err
		}
		if i == 0 {
			contract, names = c, ns
		} else if !reflect.DeepEqual(c, contract) {
			return report.Run{}, fmt.Errorf("--together: %s was judged by another contract than %s: one system has one contract (the contract flags set one for all)", name, files[0])
		} else if !slices.Equal(ns, names) {
			return report.Run{}, fmt.Errorf("--together: %s was judged by other invariants than %s: one system, one set of checks (--invariant sets one for all)", name, files[0])
		}
		if hs[i], err = loadFile(name, contract.LoadOptions()); err != nil {
			return report.Run{}, err
		}
	}
	h, num, err := together.Join(hs, files)
	if err != nil {
		return report.Run{}, fmt.Errorf("--together: %w", err)
	}
	if f.effects != "" {
		if err := addEffects(cmd.Context(), h, f.effects, f.allowRemote); err != nil {
			return report.Run{}, err
		}
	}
	checker, err := f.checker(contract, names)
	if err != nil {
		return report.Run{}, err
	}
	name := strings.Join(files, " + ")
	run := report.FromJudgement(name, h, checkers.Judge(h, checker, contract.Options()...))
	if !f.json {
		fmt.Fprintf(cmd.ErrOrStderr(), "judged %d histories as one system; ops renumbered by file: op %d is op 7 of %s, op %d op 7 of %s\n",
			len(files), num.OpStride+7, files[0], 2*num.OpStride+7, files[1%len(files)])
	}
	return run, nil
}
