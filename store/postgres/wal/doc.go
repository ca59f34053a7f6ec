// Package wal reads the committed inserts into a PostgreSQL database's
// outbox_events table from a logical replication slot, through the
// built-in pgoutput plugin and a publication of that table: the change
// stream below herald's WAL relay (`herald relay --source wal`). It is
// specific to PostgreSQL (14 or later); its Source and Reader implement
// package changestream's interfaces, through which the relay sees it, and
// pass the conformance suite store/changestream/streamtest.
//
// A Reader returns each committed transaction's new outbox rows as the
// polling path's claim would return them, with the position right after the
// transaction, so a restart resumes without returning it again; the slot is
// told a position is done only when the caller says it saved it (Confirm):
//
//	src, err := wal.NewSource(ctx, db, wal.Config{URL: url}) // slot herald_<database>, publication herald_outbox
//	if err != nil {
//		return err // names each setting or attribute to fix
//	}
//	from, err := src.SweepHead(ctx) // creates what is missing; or a Tx.Position saved earlier
//	if err != nil {
//		return err
//	}
//	r, err := src.Open(ctx, from)
//	if errors.Is(err, changestream.ErrPositionGone) {
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
//		if tx.Position != "" {
//			save(tx.Position)
//			r.(changestream.Confirmer).Confirm(tx.Position) // the slot may forget what lies before it
//		}
//	}
//
// Open, Head, SweepHead and Position are the same with typed positions.
//
// The server needs wal_level = logical and a free replication slot, and
// herald's role the REPLICATION attribute; creating the publication needs
// ownership of outbox_events. Setup and Drop create and remove the
// publication and the slot (herald stream setup and drop). See
// docs/postgres-stream.md.
package wal
