//go:build ignore

// gen rewrites scenarios/schema.json's fault parameters from the faults
// registry: `go generate ./scenarios` runs it from the scenarios directory.
package main

import (
	"fmt"
	"os"

	"github.com/idemchaos/idemchaos/internal/faultschema"
)

func main() {
	const schema, faults = "schema.json", "../faults"
	b, err := os.ReadFile(schema)
	if err == nil {
		b, err = faultschema.Update(b, faults)
	}
	if err == nil {
		err = os.WriteFile(schema, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultschema:", err)
		os.Exit(1)
	}
}
