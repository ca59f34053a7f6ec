// Package binlog reads the committed inserts into a MariaDB or MySQL
// database's outbox_events table from the server's binary log, as a replica
// does: the event source below herald's binlog relay. It is specific to
// MySQL and MariaDB; the relay sees it through an interface.
//
// A Reader returns each committed transaction's new outbox rows as the
// polling path's claim would return them, with the Position right after the
// transaction, so a restart resumes without returning it again:
//
//	if err := binlog.Check(ctx, db); err != nil {
//		return err // names each setting or grant to fix
//	}
//	from, err := binlog.Head(ctx, db) // or a Position saved from a Tx
//	if err != nil {
//		return err
//	}
//	r, err := binlog.Open(ctx, binlog.Config{DSN: dsn}, from)
//	if errors.Is(err, binlog.ErrPositionPurged) {
//		// sweep the outbox, then open from a Head taken before the sweep
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
//		save(tx.Position.String())
//	}
//
// The server needs binary logging with binlog_format=ROW,
// binlog_row_image=FULL and binlog_row_metadata=FULL, and herald's user the
// grants REPLICATION SLAVE and BINLOG MONITOR (MariaDB) or REPLICATION
// CLIENT (MySQL). See docs/binlog.md.
package binlog
