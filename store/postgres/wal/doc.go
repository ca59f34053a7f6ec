// Package wal reads the committed inserts into a PostgreSQL database's
// outbox_events table from a logical replication slot, through the
// built-in pgoutput plugin and a publication of that table: the event
// source below herald's WAL relay (`herald relay --source wal`). It is
// specific to PostgreSQL (14 or later); the relay sees it through an
// interface (relay/walsource).
//
// A Reader returns each committed transaction's new outbox rows as the
// polling path's claim would return them, with the Position right after the
// transaction, so a restart resumes without returning it again; the slot is
// told a position is done only when the caller says it saved it (Confirm):
//
//	if err := wal.Check(ctx, db); err != nil {
//		return err // names each setting or attribute to fix
//	}
//	cfg := wal.Config{URL: url}            // slot herald_<database>, publication herald_outbox
//	from, err := wal.SweepHead(ctx, db, cfg) // creates what is missing; or a Position saved from a Tx
//	if err != nil {
//		return err
//	}
//	r, err := wal.Open(ctx, cfg, db, from)
//	if errors.Is(err, wal.ErrPositionGone) {
//		// sweep the outbox, then open from a SweepHead taken before the sweep
//	}
//	if err != nil {
//		return err
//	}
//	defer r.Close()
//	for {
//		tx, err := r.Next(ctx)
//		if err != nil {
//			return err
//		}
//		publish(tx.Events) // none for a heartbeat
//		if !tx.Position.IsZero() {
//			save(tx.Position.String())
//			r.Confirm(tx.Position) // the slot may forget what lies before it
//		}
//	}
//
// The server needs wal_level = logical and a free replication slot, and
// herald's role the REPLICATION attribute; creating the publication needs
// ownership of outbox_events. Setup and Drop create and remove the
// publication and the slot (herald stream setup and drop). See
// docs/postgres-stream.md.
package wal
