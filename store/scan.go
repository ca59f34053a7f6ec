package store

import (
	"database/sql"
	"encoding/json"
	"time"
)

// Scanners of rows both dialects read alike: a dialect keeps its SQL and
// hands its rows here (as ScanStreamLease and ScanEventStates).

// ScanAuditEntries reads the rows of a dialect's ReadAuditLog query (id,
// at, actor, action, event id, reason, details), times in UTC, and closes
// rows.
func ScanAuditEntries(rows *sql.Rows, err error) ([]AuditEntry, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var a AuditEntry
		var details []byte
		if err := rows.Scan(&a.ID, &a.At, &a.Actor, &a.Action, &a.EventID, &a.Reason, &details); err != nil {
			return nil, err
		}
		a.At = a.At.UTC()
		if details != nil {
			a.Details = json.RawMessage(details)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ScanReplayProgress reads the rows of a dialect's ListReplayCheckpoints
// query (name, selection, replayed, finished, updated_at) and closes rows.
func ScanReplayProgress(rows *sql.Rows, err error) ([]ReplayProgress, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ReplayProgress
	for rows.Next() {
		var p ReplayProgress
		var sel []byte
		if err := rows.Scan(&p.Name, &sel, &p.Replayed, &p.Finished, &p.UpdatedAt); err != nil {
			return nil, err
		}
		p.UpdatedAt = p.UpdatedAt.UTC()
		if err := json.Unmarshal(sel, &p.Selection); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ScanDelays reads rows of one column of microseconds (a dialect's
// ReadDeliveryDelays query) as durations, none below zero, and closes
// rows.
func ScanDelays(rows *sql.Rows, err error) ([]time.Duration, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return nil, err
		}
		out = append(out, max(time.Duration(us)*time.Microsecond, 0))
	}
	return out, rows.Err()
}
