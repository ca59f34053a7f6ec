package postgres

import (
	"context"

	"github.com/herald-outbox/herald/store"
)

var _ store.SlotDialect = Dialect{}

// ReadSlots implements store.SlotDialect. pg_replication_slots is
// readable by every role; the WAL positions are the server's write
// position less the slot's (pg_current_wal_lsn works on a primary only,
// where a slot herald streams from lives).
func (Dialect) ReadSlots(ctx context.Context, q store.Querier) ([]store.ReplicationSlot, error) {
	rows, err := q.QueryContext(ctx, `SELECT slot_name, plugin, active, COALESCE(active_pid, 0),
		COALESCE(restart_lsn::text, ''), COALESCE(confirmed_flush_lsn::text, ''),
		COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, -1),
		COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint, -1),
		COALESCE(wal_status, ''), COALESCE(safe_wal_size, -1)
		FROM pg_replication_slots WHERE slot_type = 'logical' AND database = current_database()
		ORDER BY slot_name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ReplicationSlot
	for rows.Next() {
		var s store.ReplicationSlot
		if err := rows.Scan(&s.Name, &s.Plugin, &s.Active, &s.ActivePID, &s.RestartLSN, &s.ConfirmedFlushLSN,
			&s.RetainedBytes, &s.LagBytes, &s.WALStatus, &s.SafeWALBytes); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
