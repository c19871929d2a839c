package reference

import "errors"

// Sentinel errors. Callers match them with [errors.Is]; every other error is
// wrapped with a lowercase "what failed" prefix.
var (
	// ErrRetentionTooShort is returned by [Serve] when the key-record
	// retention is shorter than the longest window in which clients may
	// still retry: a retry arriving after its record was purged would
	// execute again (seed 000 §六: "put both values in one config and refuse
	// to start when the relation does not hold").
	ErrRetentionTooShort = errors.New("retention shorter than the maximum client retry window")

	// ErrUnknownMutant is returned when a mutant name is not in [Mutants].
	ErrUnknownMutant = errors.New("unknown mutant")

	// ErrInvalidConfig is returned for a configuration that cannot run
	// (missing DSN, non-positive lease, no tokens, ...).
	ErrInvalidConfig = errors.New("invalid configuration")

	// ErrReplicaRequired is returned when the replica-read mutant is chosen
	// without a replica DSN.
	ErrReplicaRequired = errors.New("mutant replica-read needs a replica DSN")

	// errLostLease: the lease this request held was taken over by another
	// attempt, so its transaction must not commit.
	errLostLease = errors.New("idempotency lease lost")
	// errBackstop: the business unique constraint caught a second order for
	// a key the key table no longer protected (e.g. a retry after the record
	// was purged).
	errBackstop = errors.New("business unique constraint")
	// errBodyTooLarge: the request body is above maxBodyBytes (413).
	errBodyTooLarge = errors.New("request body larger than 1 MiB")
	// errBodyNotObject and errBodyFields: an invalid order body (400).
	errBodyNotObject = errors.New("body must be a JSON object with sku, qty and amount")
	errBodyFields    = errors.New("sku must be 1-64 bytes, qty 1-1000, amount 1-1000000000")
	// errBodyText: a body whose strings Postgres cannot store (\u0000)
	// or that decode to text another body decodes to as well (a lone
	// surrogate escape, bytes not UTF-8: both become U+FFFD) (400).
	errBodyText = errors.New("body strings must be UTF-8 text without \\u0000 or lone surrogate escapes")
	// errUnknownFailpoint: no failpoint has that name (404).
	errUnknownFailpoint = errors.New("unknown failpoint")
)
