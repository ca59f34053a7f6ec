package migrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/migrations"
)

func TestUpIsIdempotent(t *testing.T) {
	d := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := migrations.Herald.Check(ctx, d.DB); err == nil {
		t.Fatal("Check passed on an empty database")
	}
	applied, err := migrations.Herald.Up(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 {
		t.Fatal("first Up applied nothing")
	}
	again, err := migrations.Herald.Up(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second Up applied %v, want nothing", again)
	}
	if err := migrations.Herald.Check(ctx, d.DB); err != nil {
		t.Errorf("Check after Up: %v", err)
	}
	for _, table := range []string{"outbox_events", "outbox_aggregates", "consumed_events"} {
		var n int
		if err := d.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

func TestConcurrentUpAppliesOnce(t *testing.T) {
	d := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := migrations.Herald.Up(ctx, d.DB)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Up: %v", err)
		}
	}
	st, err := migrations.Herald.Status(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != st.Latest {
		t.Errorf("after concurrent Up: version %d, want %d", st.Current, st.Latest)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A newer herald recorded a migration this binary does not have.
	if _, err := d.DB.ExecContext(ctx,
		"INSERT INTO "+migrations.Herald.Table+" (version_id, is_applied) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Herald.Up(ctx, d.DB)
	if !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Fatalf("Up on a newer schema: got %v, want ErrSchemaTooNew", err)
	}
	t.Logf("refused with: %v", err)
	if err := migrations.Herald.Check(ctx, d.DB); !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Errorf("Check on a newer schema: got %v, want ErrSchemaTooNew", err)
	}
}
