package wal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestCheckNamesTheReplicationAttribute: the stack's herald role can
// stream; its TLS role, a member of it, cannot (role attributes are not
// inherited), and Check says what to grant, naming the fix.
func TestCheckNamesTheReplicationAttribute(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wal.Check(ctx, d.DB); err != nil {
		t.Fatalf("the herald role: %v", err)
	}
	url, opts := testenv.StackPostgresTLS(t, d.Name)
	db, err := postgres.OpenWith(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = wal.Check(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "REPLICATION attribute") || !strings.Contains(err.Error(), "ALTER ROLE") {
		t.Fatalf("Check as a role without REPLICATION: %v, want the attribute and the ALTER ROLE that grants it", err)
	}
}

// TestOpenRefusesASlotAheadOfThePosition: a slot that confirmed a later
// position than the one asked for (advanced by someone else, or created
// anew) cannot give the transactions between: Open reports the position
// gone, so the relay sweeps instead of skipping them.
func TestOpenRefusesASlotAheadOfThePosition(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	cfg := wal.Config{URL: d.DSN}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { wal.Drop(context.Background(), d.DB, cfg, true) })
	before, err := wal.Head(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	d.Exec(t, "CREATE TABLE neighbour (note text)")
	d.Exec(t, "INSERT INTO neighbour VALUES ('moves the WAL')")
	if _, _, err := wal.Setup(ctx, d.DB, cfg); err != nil { // the slot starts after before
		t.Fatal(err)
	}
	if r, err := wal.Open(ctx, d.DB, cfg, before); err == nil {
		r.Close()
		t.Fatal("Open at a position before the slot's confirmed one succeeded")
	} else if !strings.Contains(err.Error(), "confirmed") {
		t.Fatalf("Open: %v, want the slot's confirmed position named", err)
	}
	if _, err := wal.Open(ctx, d.DB, cfg, before); err == nil || !isGone(err) {
		t.Fatalf("Open: %v, want changestream.ErrPositionGone", err)
	}
}

func isGone(err error) bool { return errors.Is(err, changestream.ErrPositionGone) }
