// Package migrations holds herald's versioned schema (embedded SQL applied
// with pressly/goose), one set of files per database (sql/ for MySQL and
// MariaDB, postgres/ for PostgreSQL, the same versions and logical schema),
// and the small runner the examples reuse for their own tables.
//
// The runner asks the server which database it is, so one call serves both.
// Applying is idempotent and safe to run from several processes at once (a
// MySQL named lock, or a PostgreSQL advisory lock, serializes them). A
// database whose schema is newer than the running binary is refused, so an
// old relay never runs against tables it does not understand.
//
// Start at Herald, the schema's Set: Up, Check and Status. A foreign
// outbox table's copy is InstallMapping, ReadMappings and DropMapping
// (mapping.go).
package migrations
