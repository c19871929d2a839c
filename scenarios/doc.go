// Package scenarios loads, validates and documents idemchaos's YAML
// scenarios, and ships the bundled ones with their JSON Schema.
//
// The exported API:
//
//   - [Scenario] and its parts ([Target], [ReferenceTarget], [Endpoint],
//     [Contract], [Traffic], [Retry], [FaultSpec], [When], [Effects],
//     [Invariant], [Hooks], [Step]): one scenario file, decoded, validated,
//     defaults filled in.
//   - [Load] and [Parse]: read and check a file. Every problem comes back at
//     once in an [*Errors], each an [Error] printed "file:line:col: message"
//     that says what was expected (and, for a typo, what was meant).
//   - [Bundled]: the suite shipped inside the binary.
//   - [FaultSpec.Build]: the fault a spec describes, a fresh, validated value.
//   - [Scenario.EffectiveSteps], [Scenario.Profile], [Scenario.CheckerContract], [Scenario.CheckerOptions],
//     [Scenario.Checker] and [Scenario.InvariantNames]: what a runner needs;
//     [Scenario.Where]: the file:line:col of a setting a run refuses later
//     (an address off the machine, target.allow_remote without the flag).
//   - [Schema] and [SchemaURL]: the JSON Schema (draft 2020-12) of the format,
//     for editors (yaml-language-server) and other tools; [ParamNames] lists
//     a fault kind's parameters.
//
// Validation has three layers, all positioned: YAML syntax (goccy/go-yaml's
// parser keeps every node's line and column), the JSON Schema (evaluated by
// santhosh-tekuri/jsonschema on the plain values, its errors mapped back to
// the nodes and reworded), and Go rules no schema can say: fault parameters
// decoded into the kind's own struct, hooks for process faults on external
// targets, step expectations naming the scenario's invariants, profile and
// oracle consistency, retention against the retry window.
package scenarios
