// Package changestream is what herald's change-stream readers share: the
// interfaces package relay streams through (Source, Reader, and the
// optional Sweeper and Confirmer), the transaction they hand out (Tx), the
// settings every reader takes (Config), the errors callers branch on
// (ErrPositionGone, ErrClosed, DecodeError), how an outbox row's columns
// are found by name, and the reconnection and lag loops.
//
// Two packages implement it, one per database:
//
//	store/mysql/binlog      MariaDB's and MySQL's binary log
//	store/postgres/wal      PostgreSQL's logical replication (pgoutput)
//	store/changestream/streamtest   the conformance suite both pass
//
// A caller opens a source on the outbox's database and reads committed
// transactions from a saved position, or from the head:
//
//	src, err := binlog.NewSource(ctx, db, binlog.Config{DSN: dsn}) // or wal.NewSource(ctx, db, wal.Config{URL: url})
//	if err != nil {
//		return err // a setting, grant or attribute to fix, named
//	}
//	from, err := src.Head(ctx) // or a Tx.Position saved earlier
//	r, err := src.Open(ctx, from)
//	if errors.Is(err, changestream.ErrPositionGone) {
//		// sweep the outbox, then open from a head taken before the sweep
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
//		}
//	}
//
// docs/design.md ("Change-stream sources") says what the relay builds on
// it and which invariants (S1, S2) the readers' answers keep.
package changestream
