package reference

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// sqlPurge deletes key records older than the retention, except a
// 'processing' record whose lease still runs.
const sqlPurge = `DELETE FROM idempotency_keys
WHERE created_at < now() - $1::float8 * interval '1 second'
  AND (state <> 'processing' OR lease_expires_at < now())`

// purge deletes expired key records once and returns how many went.
func (s *server) purge(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, sqlPurge, s.cfg.effectiveRetention(s.m).Seconds())
	if err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	n := tag.RowsAffected()
	s.metrics.purged.Add(float64(n))
	return n, nil
}

// purgeLoop runs the retention purge every PurgeInterval until ctx is done.
func (s *server) purgeLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.purge(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("retention purge failed", "error", err.Error())
		case n > 0:
			s.log.Info("retention purge", "purged", n, "retention", s.cfg.effectiveRetention(s.m).String())
		}
	}
}

// debugPurge is POST /debug/purge: run the purge now (failpoints only), so
// a test can place a purge between two attempts without waiting for the
// ticker.
func (s *server) debugPurge(w http.ResponseWriter, r *http.Request) {
	n, err := s.purge(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"purged": n})
}
