package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store"
)

// downStore is a Store whose database goes away after the relay's first
// turn: every later turn fails.
type downStore struct {
	Store // nil: a call the test does not expect panics
	turns atomic.Int32
}

var errDown = errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")

func (s *downStore) Rebalance(_ context.Context, req store.RebalanceRequest) (store.Rebalance, error) {
	if s.turns.Add(1) == 1 {
		now := time.Now()
		return store.Rebalance{Now: now, Ownership: store.Ownership{Expires: now.Add(req.Lease)}}, nil
	}
	return store.Rebalance{}, errDown
}

func (s *downStore) Claim(context.Context, store.ClaimRequest) (store.Claim, error) {
	return store.Claim{}, errDown
}

func (s *downStore) Leave(context.Context, string) error { return nil }

// TestRelayWithoutItsDatabaseDoesNotSpin: while every turn at the bucket
// table fails, the relay tries one a turn interval (a second) at most.
// Before, a failed turn during the backoff's wait was tried again at once:
// 23,000 log lines and as many connection attempts in three minutes of a
// database restart (found by the drills).
func TestRelayWithoutItsDatabaseDoesNotSpin(t *testing.T) {
	st := &downStore{}
	r, err := New(Config{ID: "spin", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	const run = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// One at the start, then one a second: 4 in three seconds, and a
	// margin for a slow machine.
	if n := st.turns.Load(); n < 2 || n > 6 {
		t.Errorf("%d turns tried in %v, want about one a second", n, run)
	}
}
