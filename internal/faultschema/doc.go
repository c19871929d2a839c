// Package faultschema writes the fault parameters of scenarios/schema.json
// from the faults registry, so that a new fault kind is one file: its
// parameters struct (yaml tags, a doc comment per field, constraints in
// jsonschema tags) is the one source of the editor help that the schema
// gives and of the checks its Validate makes.
//
// The exported API:
//
//   - [Update]: schema.json with its generated parts rewritten, everything
//     else byte for byte as it was. `go generate ./scenarios` runs it
//     (gen.go); scenarios' test fails when the committed file differs.
//   - [Params] and [Param]: a kind's parameters as the schema describes
//     them, for the test that holds each kind's Validate to its tags.
//
// A parameter is an exported field with a yaml tag, found through embedded
// structs as the scenario loader finds it. Its schema type follows its Go
// type (string, bool, integer, number, time.Duration as a duration); its
// description is its doc comment, with Go field names said as their yaml
// keys; a `jsonschema:"enum=a,enum=b,minimum=1,maximum=9"` tag adds
// constraints (the tag convention of invopop/jsonschema).
package faultschema
