package reference_test

import (
	"context"
	"testing"

	"github.com/idemchaos/idemchaos/harness/pgtest"
	"github.com/idemchaos/idemchaos/reference"
)

func TestMigrate_Idempotent(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Database(t)
	ctx := context.Background()
	done := make(chan error, 3)
	for range 3 {
		go func() { done <- reference.Migrate(ctx, dsn) }()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
	if err := reference.Migrate(ctx, dsn); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
}
