package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/scaffold"
	"github.com/idemchaos/idemchaos/scenarios"
)

type initFlags struct {
	openapi      string
	out          string
	keyHeader    string
	tenantHeader string
	operations   []string
	force        bool
}

func (m *Main) initCmd() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init --openapi FILE [--out DIR]",
		Short: "Write a scenario suite from an OpenAPI 3.0/3.1 document",
		Long: `init reads an OpenAPI 3.0 or 3.1 document (YAML or JSON) and writes two scenarios
for every write operation that declares the idempotency-key header (--key-header),
and for every operation named with --operation:

  NAME.yaml        faults that need nothing but HTTP (lost responses, double clicks,
                   gateway timeouts, rate limits, key reuse, twins, tenants sharing
                   keys): runs as soon as its effects block reads your effects
  NAME-infra.yaml  faults that need your processes or database (crashes, a consumer
                   restart, late retries after a purge, a lagging replica, a slow
                   database): fill in its hooks first

The request body is generated from the schema, the tenant inferred from the
security schemes and parameters, the status contract read from the documented
responses. Every value the document did not state is marked "guess:" in a
comment next to it. The effects block is a TODO, with examples for the sql and
http oracles: the document says what the API answers, not where its effects land.
Every file written passes validate.

Exit codes: 0 written, 3 an unreadable document, no operation found, or a file
that exists (--force overwrites).`,
		Example: `  idemchaos init --openapi openapi.yaml --out idemchaos/
  idemchaos init --openapi api.json --key-header X-Request-Key
  idemchaos init --openapi api.yaml --operation createRefund --operation "POST /v1/transfers"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.runInit(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.openapi, "openapi", "", "the OpenAPI 3.0/3.1 document (YAML or JSON)")
	fl.StringVar(&f.out, "out", "idemchaos-scenarios", "the directory to write the scenarios to (not \"idemchaos\": the binary is usually built by that name)")
	fl.StringVar(&f.keyHeader, "key-header", "Idempotency-Key", "the idempotency-key header to look for (case-insensitive)")
	fl.StringVar(&f.tenantHeader, "tenant-header", "", "the header that carries the tenant, when the document's names and descriptions do not say (tenant, customer, account, organization, workspace... are recognised)")
	fl.StringArrayVar(&f.operations, "operation", nil, `also scaffold this operation: an operationId or "POST /path" (repeatable)`)
	fl.BoolVar(&f.force, "force", false, "overwrite files that exist")
	_ = cmd.MarkFlagRequired("openapi")
	return cmd
}

func (m *Main) runInit(cmd *cobra.Command, f initFlags) error {
	doc, err := scaffold.Load(cmd.Context(), f.openapi)
	if err != nil {
		return usageError(err)
	}
	errw := cmd.ErrOrStderr()
	for _, w := range doc.Warnings {
		fmt.Fprintf(errw, "warning: %s: %s (scaffolding anyway)\n", f.openapi, w)
	}
	files, err := scaffold.Generate(doc, scaffold.Options{KeyHeader: f.keyHeader, Operations: f.operations, TenantHeader: f.tenantHeader})
	if err != nil {
		return usageError(fmt.Errorf("init: %s: %w", f.openapi, err))
	}
	if !f.force {
		for _, file := range files {
			p := filepath.Join(f.out, file.Name)
			if _, err := os.Stat(p); err == nil {
				return usageError(fmt.Errorf("init: %s exists; pass --force to overwrite it", p))
			}
		}
	}
	if st, err := os.Stat(f.out); err == nil && !st.IsDir() {
		// Most often the binary `go build -o idemchaos` left in a checkout.
		return usageError(fmt.Errorf("init: %s is a file, not a directory (the idemchaos binary?): pass --out DIR", f.out))
	}
	// What run will load must be what validate accepts: every file is
	// checked before any is written, so a generator bug is never the
	// user's to find, and never leaves a half-written suite behind.
	var invalid []error
	for _, file := range files {
		p := filepath.Join(f.out, file.Name)
		if _, err := scenarios.Parse(p, []byte(file.Text)); err != nil {
			invalid = append(invalid, err)
		}
	}
	if len(invalid) > 0 {
		return usageError(fmt.Errorf("init: a generated file does not validate (a bug in init; please report it); nothing written: %w", errors.Join(invalid...)))
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usageError(fmt.Errorf("init: %w", err))
	}
	out := cmd.OutOrStdout()
	for _, file := range files {
		p := filepath.Join(f.out, file.Name)
		if err := os.WriteFile(p, []byte(file.Text), 0o644); err != nil {
			return usageError(fmt.Errorf("init: %w", err))
		}
		fmt.Fprintf(out, "wrote %s  (%s)\n", p, file.Operation)
	}
	seen := map[string]bool{}
	for _, file := range files {
		for _, n := range file.Notes {
			if !seen[n] {
				seen[n] = true
				fmt.Fprintf(out, "note: %s: %s\n", file.Operation, n)
			}
		}
	}
	fmt.Fprintf(out, `next:
  1. review every "guess:" comment in %s
  2. fill in the effects block (TODO effects: an sql or http oracle)
  3. idemchaos run -s %s          (it targets %s; --target URL for another address)
`, f.out, filepath.Join(f.out, files[0].Name), files[0].Target)
	return nil
}
