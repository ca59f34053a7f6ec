// Package binlog reads the committed inserts into a MariaDB or MySQL
// database's outbox_events table from the server's binary log, as a replica
// does: the change stream below herald's binlog relay (`herald relay
// --source binlog`). It is specific to MySQL and MariaDB; its Source and
// Reader implement package changestream's interfaces, through which the
// relay sees it, and pass the conformance suite store/changestream/streamtest.
//
// A Reader returns each committed transaction's new outbox rows as the
// polling path's claim would return them, with the position right after the
// transaction, so a restart resumes without returning it again:
//
//	src, err := binlog.NewSource(ctx, db, binlog.Config{DSN: dsn}) // db: a pool as dsn's user
//	if err != nil {
//		return err // names each setting or grant to fix
//	}
//	from, err := src.Head(ctx) // or a Tx.Position saved earlier
//	if err != nil {
//		return err
//	}
//	r, err := src.Open(ctx, from)
//	if errors.Is(err, changestream.ErrPositionGone) {
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
//		if tx.Position != "" {
//			save(tx.Position)
//		}
//	}
//
// Open, Head and Position are the same with typed positions.
//
// The server needs binary logging with binlog_format=ROW,
// binlog_row_image=FULL and binlog_row_metadata=FULL, and herald's user the
// grants REPLICATION SLAVE and BINLOG MONITOR (MariaDB) or REPLICATION
// CLIENT (MySQL). See docs/binlog.md.
package binlog
