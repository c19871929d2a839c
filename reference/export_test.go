package reference

// BenchSQL exposes, to the external tests, the statements one request runs,
// so the pgbench yardstick runs the very same SQL text.
var BenchSQL = struct {
	Claim, Debit, Complete, InsertOrder, InsertDebit, InsertOutbox string
}{sqlClaim, sqlDebit, sqlComplete, sqlInsertOrder, sqlInsertDebit, sqlInsertOutbox}
