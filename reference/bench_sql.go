package reference

// BenchSQL is the SQL text of one request, statement by statement, so that a
// yardstick (pgbench, in internal/refbench) runs the very same statements the
// service runs: the claim, then the business transaction (debit, completion
// with the stored response, order, ledger entry, outbox event). A replay is
// the claim alone, losing to the existing record.
var BenchSQL = struct {
	Claim, Debit, Complete, InsertOrder, InsertDebit, InsertOutbox string
}{sqlClaim, sqlDebit, sqlComplete, sqlInsertOrder, sqlInsertDebit, sqlInsertOutbox}
