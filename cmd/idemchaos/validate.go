package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/scenarios"
)

func (m *Main) validateCmd() *cobra.Command {
	var recursive, schema bool
	cmd := &cobra.Command{
		Use:   "validate PATH...",
		Short: "Check scenario files against the schema and the semantic rules",
		Long: `validate loads each scenario file the way run does, without starting anything:
YAML syntax, the JSON Schema (unknown keys, types, durations, rates, enums), fault
parameters, and the rules no schema can say (hooks for process faults on url
targets, step expectations naming the scenario's invariants, ...).

A PATH is a file or a directory; a directory means its *.yaml and *.yml files
(with --recursive, those of its subdirectories too). Each valid file prints
"ok  FILE"; each problem prints as "file:line:col: message", every problem of
every file at once.

Editors: put "# yaml-language-server: $schema=` + scenarios.SchemaURL + `"
on a scenario's first line (or a relative path to scenarios/schema.json), or
write the schema out with --schema.

A file with target.allow_remote: true is valid; validate notes that its run
needs --allow-remote (a file cannot allow remote traffic by itself).

Exit codes: 0 every file is valid, 3 a file is invalid or unreadable.`,
		Example: `  idemchaos validate scenarios/
  idemchaos validate scenarios/response-drop-replay.yaml my-service.yaml
  idemchaos validate --recursive scenarios/
  idemchaos validate --schema > scenario.schema.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if schema {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if schema {
				_, err := m.Stdout.Write(scenarios.Schema())
				return err
			}
			return m.runValidate(args, recursive)
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "also validate the scenario files of subdirectories")
	cmd.Flags().BoolVar(&schema, "schema", false, "print the scenario JSON Schema (draft 2020-12) and exit")
	return cmd
}

func (m *Main) runValidate(paths []string, recursive bool) error {
	files, err := scenarioFiles(paths, recursive)
	if err != nil {
		return usageError(err)
	}
	bad := 0
	for _, f := range files {
		s, err := scenarios.Load(f)
		if err == nil {
			fmt.Fprintf(m.Stdout, "ok  %s\n", f)
			if s.Target.AllowRemote {
				// Valid: validate judges the file, and sends nothing. But
				// the file cannot allow remote traffic itself; say what
				// its run needs.
				fmt.Fprintf(m.Stderr, "%s: note: target.allow_remote: this scenario runs only with --allow-remote\n", s.Where("target.allow_remote"))
			}
			continue
		}
		bad++
		var errs *scenarios.Errors
		if errors.As(err, &errs) {
			for _, e := range errs.List {
				fmt.Fprintln(m.Stderr, e.Error())
			}
		} else {
			fmt.Fprintf(m.Stderr, "%s: %v\n", f, err)
		}
	}
	if bad > 0 {
		return usageError(fmt.Errorf("validate: %d of %d scenario files invalid", bad, len(files)))
	}
	return nil
}

// scenarioFiles expands the paths: files as given, directories to their
// *.yaml and *.yml files in name order.
func scenarioFiles(paths []string, recursive bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("validate: no *.yaml files in %s", p)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}
