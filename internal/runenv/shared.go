package runenv

import (
	"context"
	"sync"
)

var shared struct {
	mu  sync.Mutex
	run *Run
}

// Shared returns this process's shared run, opening it (with default
// [Options], which reaps stale runs) on first use. Close it with
// [CloseShared].
func Shared(ctx context.Context) (*Run, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.run != nil {
		return shared.run, nil
	}
	r, err := Open(ctx, Options{})
	if err != nil {
		return nil, err
	}
	shared.run = r
	return r, nil
}

// CloseShared closes the shared run if one was opened. A later [Shared]
// opens a new one.
func CloseShared(ctx context.Context) error {
	shared.mu.Lock()
	r := shared.run
	shared.run = nil
	shared.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.Close(ctx)
}
