package migrations

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/herald-outbox/herald/internal/config"
)

// Mapping says which columns of a foreign outbox table (one written for
// another relay, such as Debezium's outbox router) hold what herald needs,
// so that InstallMapping can copy each inserted row into outbox_events in
// the writer's transaction (docs/design.md, section 10). Column names are
// the table's; the Debezium property each field mirrors is named beside it.
type Mapping struct {
	// Table is the foreign table, in the database (MySQL) or schema
	// (PostgreSQL) herald's tables are in. Required.
	Table string `json:"table"`
	// ID holds the event id, a UUID (table.field.event.id). Defaults to
	// "id".
	ID string `json:"id"`
	// AggregateType holds the aggregate type (route.by.field). Defaults to
	// "aggregatetype".
	AggregateType string `json:"aggregate_type"`
	// AggregateID holds the aggregate id, the record's key
	// (table.field.event.key). Defaults to "aggregateid".
	AggregateID string `json:"aggregate_id"`
	// EventType holds the event type (table.field.event.type). Defaults to
	// "type".
	EventType string `json:"event_type"`
	// Payload holds the payload, a JSON document (table.field.event.payload).
	// Defaults to "payload".
	Payload string `json:"payload"`
	// Timestamp, when set, holds the event's time
	// (table.field.event.timestamp): it becomes occurred_at. Defaults to
	// none: occurred_at is the time of the insert.
	Timestamp string `json:"timestamp,omitempty"`
	// SchemaVersion, when set, holds the payload's schema version
	// (table.field.event.schema.version). Defaults to none: version 1.
	SchemaVersion string `json:"schema_version,omitempty"`
	// Headers, when set, holds a JSON object of string headers (herald's
	// own herald.field.event.headers). Defaults to none.
	Headers string `json:"headers,omitempty"`
	// Fields are copied into outbox_events.fields by name, for the record
	// formats (table.fields.additional.placement). Defaults to none.
	Fields []string `json:"fields,omitempty"`
}

// Defaults of Mapping: Debezium's outbox columns.
const (
	MappingIDDefault            = "id"
	MappingAggregateTypeDefault = "aggregatetype"
	MappingAggregateIDDefault   = "aggregateid"
	MappingEventTypeDefault     = "type"
	MappingPayloadDefault       = "payload"
)

// WithDefaults returns m with its empty required columns set to their
// defaults.
func (m Mapping) WithDefaults() Mapping {
	for _, f := range []struct {
		col *string
		def string
	}{
		{&m.ID, MappingIDDefault}, {&m.AggregateType, MappingAggregateTypeDefault},
		{&m.AggregateID, MappingAggregateIDDefault}, {&m.EventType, MappingEventTypeDefault},
		{&m.Payload, MappingPayloadDefault},
	} {
		if *f.col == "" {
			*f.col = f.def
		}
	}
	return m
}

// identifier is a name InstallMapping writes into SQL unquoted-safe: it is
// quoted all the same, but no quoting character can reach the statement.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,62}$`)

// Validate reports every invalid field of m at once (empty columns take
// their defaults), each as a *config.Error naming the field.
func (m Mapping) Validate() error {
	m = m.WithDefaults()
	var errs config.Errors
	check := func(field, name string) {
		if name != "" && !identifier.MatchString(name) {
			errs.Add(field, "%q is not a column or table name herald accepts (letters, digits, _ and $, at most 63, not starting with a digit)", name)
		}
	}
	if m.Table == "" {
		errs.Add("Table", "is required")
	}
	check("Table", m.Table)
	// Only a true collision: herald's schema puts its tables in the
	// foreign table's database, so a table of one of their names cannot
	// be both. Any other name (outbox_messages, herald_x) is the team's.
	if tables := Herald.Tables(); slices.Contains(tables, m.Table) {
		errs.Add("Table", "%q is one of herald's own tables, which herald's schema puts in this database beside yours (%s); "+
			"herald copies a table of any other name: rename yours first (docs/from-debezium.md, \"Your table's name\")",
			m.Table, strings.Join(tables, ", "))
	}
	seen := map[string]string{}
	for _, c := range m.columns() {
		check(c.field, c.name)
		if c.name == "" {
			continue
		}
		if other, ok := seen[c.name]; ok && c.field != "Fields" {
			errs.Add(c.field, "column %s already holds %s", c.name, fieldMeaning[other])
		}
		seen[c.name] = c.field
	}
	for i, f := range m.Fields {
		if slices.Index(m.Fields, f) != i {
			errs.Add("Fields", "column %s is listed twice", f)
		}
	}
	return errs.Err()
}

// fieldMeaning says what each mapped field's column holds, in words: a
// message names it so, not by the Go field a connector's reader renames.
var fieldMeaning = map[string]string{
	"ID": "the event id", "AggregateType": "the aggregate type", "AggregateID": "the aggregate id",
	"EventType": "the event type", "SchemaVersion": "the schema version", "Payload": "the payload",
	"Headers": "the headers", "Timestamp": "the event's time",
}

// mappedColumn is one column of a mapping: the Mapping field naming it,
// its name, and the outbox_events column it fills ("" for Fields).
type mappedColumn struct {
	field, name, target string
}

// columns lists m's columns, the mapped ones first, in outbox_events'
// order.
func (m Mapping) columns() []mappedColumn {
	cols := []mappedColumn{
		{"ID", m.ID, "id"}, {"AggregateType", m.AggregateType, "aggregate_type"},
		{"AggregateID", m.AggregateID, "aggregate_id"}, {"EventType", m.EventType, "event_type"},
		{"SchemaVersion", m.SchemaVersion, "schema_version"}, {"Payload", m.Payload, "payload"},
		{"Headers", m.Headers, "headers"}, {"Timestamp", m.Timestamp, "occurred_at"},
	}
	for _, f := range m.Fields {
		cols = append(cols, mappedColumn{"Fields", f, ""})
	}
	return cols
}

// TriggerName is the name of the trigger (on PostgreSQL, also of its
// function) that copies table's inserts: herald_copy_<table>, shortened
// with a checksum when that would pass 63 characters.
func TriggerName(table string) string {
	name := "herald_copy_" + table
	if len(name) <= 63 {
		return name
	}
	return fmt.Sprintf("%s_%08x", name[:54], crc32.ChecksumIEEE([]byte(table)))
}

// herald's column widths, in characters: a foreign value longer than one
// fails the writer's insert with a message naming the foreign column.
var heraldWidths = map[string]int{"aggregate_type": 64, "aggregate_id": 128, "event_type": 128}

// ErrNoSuchMapping is returned by DropMapping for a table no mapping
// copies.
var ErrNoSuchMapping = errors.New("no foreign table mapping for this table")

// InstalledMapping is a mapping as outbox_mappings records it.
type InstalledMapping struct {
	Mapping
	// Trigger names the trigger that copies the table's inserts.
	Trigger string `json:"trigger"`
	// InstalledAt is when InstallMapping last wrote it.
	InstalledAt time.Time `json:"installed_at"`
}

// column is a foreign table's column as the server describes it.
type column struct {
	name, dataType string
}

// kinds of column a mapped field may have, per server.
const (
	kindText    = "text"
	kindUUID    = "uuid"
	kindJSON    = "json"
	kindTime    = "time"
	kindInteger = "integer"
	kindBoolean = "boolean"
)

// columnKind classifies a server's data type, "" for one herald does not
// copy.
func columnKind(kind, dataType string) string {
	t := strings.ToLower(dataType)
	switch t {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "character", "character varying":
		return kindText
	case "uuid":
		return kindUUID
	case "json", "jsonb":
		return kindJSON
	case "datetime", "timestamp", "timestamp without time zone", "timestamp with time zone":
		return kindTime
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return kindInteger
	case "boolean":
		if kind == serverPostgres {
			return kindBoolean
		}
	}
	return ""
}

// allowedKinds are the kinds each mapped field accepts.
var allowedKinds = map[string][]string{
	"ID":            {kindText, kindUUID},
	"AggregateType": {kindText},
	"AggregateID":   {kindText},
	"EventType":     {kindText},
	"SchemaVersion": {kindInteger},
	"Payload":       {kindText, kindJSON},
	"Headers":       {kindText, kindJSON},
	"Timestamp":     {kindTime},
	"Fields":        {kindText, kindUUID, kindInteger, kindBoolean},
}

// CheckMapping checks, writing nothing, everything InstallMapping checks
// of m and the table it names: its fields, the table, its columns and
// their kinds and, on MySQL and MariaDB, its engine and the account's
// right to create its trigger. It does not need herald's schema, so a
// caller runs it before herald's migrations: a mapping that does not fit
// then changes nothing at all. Problems of a field are *config.Error
// naming it (Table for a table that does not exist).
func CheckMapping(ctx context.Context, db *sql.DB, m Mapping) error {
	_, _, err := m.check(ctx, db)
	return err
}

// check is CheckMapping's: it returns the server's kind and the table's
// columns as well.
func (m Mapping) check(ctx context.Context, db *sql.DB) (string, map[string]column, error) {
	if err := m.Validate(); err != nil {
		return "", nil, fmt.Errorf("mapping: %w", err)
	}
	m = m.WithDefaults()
	kind, err := serverKind(ctx, db)
	if err != nil {
		return "", nil, err
	}
	cols, err := tableColumns(ctx, db, kind, m.Table)
	if err != nil {
		return "", nil, err
	}
	if err := m.fits(kind, cols); err != nil {
		return "", nil, err
	}
	if kind == serverMySQL {
		if err := m.checkMySQL(ctx, db); err != nil {
			return "", nil, err
		}
	}
	return kind, cols, nil
}

// InstallMapping makes herald relay a foreign outbox table: it checks the
// table and its columns against m (CheckMapping), creates (or replaces)
// the trigger that copies every inserted row into outbox_events in the
// writer's transaction, and records m in outbox_mappings. herald's own
// migrations must be applied first. A mapping the table does not fit
// changes nothing and names every problem at once. On MariaDB the trigger
// is replaced in one statement (CREATE OR REPLACE), on PostgreSQL in one
// transaction; on MySQL, which has neither, under LOCK TABLES, so no
// insert falls between the old trigger and the new one.
func InstallMapping(ctx context.Context, db *sql.DB, m Mapping) error {
	kind, cols, err := m.check(ctx, db)
	if err != nil {
		return err
	}
	m = m.WithDefaults()
	if err := Herald.Check(ctx, db); err != nil {
		return err
	}
	record, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if kind == serverPostgres {
		return installPostgres(ctx, db, m, cols, record)
	}
	return installMySQL(ctx, db, m, cols, record)
}

// fits checks that the table has every mapped column, of a kind herald
// copies.
func (m Mapping) fits(kind string, cols map[string]column) error {
	var errs config.Errors
	for _, c := range m.columns() {
		if c.name == "" {
			continue
		}
		col, ok := cols[c.name]
		if !ok {
			errs.Add(c.field, "table %s has no column %s", m.Table, c.name)
			continue
		}
		if !slices.Contains(allowedKinds[c.field], columnKind(kind, col.dataType)) {
			errs.Add(c.field, "column %s.%s is %s; herald copies it from a column of kind %s",
				m.Table, c.name, col.dataType, strings.Join(allowedKinds[c.field], " or "))
		}
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("mapping of table %s: %w", m.Table, err)
	}
	return nil
}

// tableColumns reads table's columns from the current database (MySQL)
// or schema (PostgreSQL); a missing table is an error naming it.
func tableColumns(ctx context.Context, db *sql.DB, kind, table string) (map[string]column, error) {
	query := `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = ?`
	if kind == serverPostgres {
		query = `SELECT column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1`
	}
	rows, err := db.QueryContext(ctx, query, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]column{}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.dataType); err != nil {
			return nil, err
		}
		cols[c.name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		where := "this database"
		if kind == serverPostgres {
			where = "this schema"
		}
		var errs config.Errors
		errs.Add("Table", "table %s does not exist in %s (the foreign table must be in herald's database)", table, where)
		return nil, fmt.Errorf("mapping: %w", errs.Err())
	}
	return cols, nil
}

// lengthChecks returns, per mapped text column that herald holds in a
// column of limited width, its foreign name, herald's column and width.
func (m Mapping) lengthChecks() []mappedColumn {
	var out []mappedColumn
	for _, c := range m.columns() {
		if _, ok := heraldWidths[c.target]; ok {
			out = append(out, c)
		}
	}
	return out
}

// checkMySQL checks what MySQL and MariaDB need of the table and the
// account: InnoDB, and the right to create a trigger.
func (m Mapping) checkMySQL(ctx context.Context, db *sql.DB) error {
	var engine string
	err := db.QueryRowContext(ctx, `SELECT COALESCE(engine, '') FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = ?`, m.Table).Scan(&engine)
	if err != nil {
		return fmt.Errorf("read the engine of %s: %w", m.Table, err)
	}
	if !strings.EqualFold(engine, "InnoDB") {
		var errs config.Errors
		errs.Add("Table", "table %s is %s; its rows and their copies must commit together, which needs InnoDB", m.Table, engine)
		return fmt.Errorf("mapping: %w", errs.Err())
	}
	srv, err := readTriggerServer(ctx, db)
	if err != nil {
		return fmt.Errorf("mapping: check the privilege to create triggers: %w", err)
	}
	if srv.refusesTriggers() {
		return fmt.Errorf("mapping: %w: nothing was changed.\n"+
			"This server writes a binary log and has log_bin_trust_function_creators=OFF, so it refuses CREATE TRIGGER\n"+
			"(ERROR 1419) to %s. As an administrator: SET GLOBAL log_bin_trust_function_creators = 1 (and in the\n"+
			"server's configuration), or GRANT SUPER ON *.* TO %s; then run herald migrate up --mapping again",
			ErrTriggerPrivilege, srv.account, srv.account)
	}
	return nil
}

func installMySQL(ctx context.Context, db *sql.DB, m Mapping, cols map[string]column, record []byte) error {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return err
	}
	trigger := TriggerName(m.Table)
	body := mysqlCopy(m, cols)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	exec := func(query string) error {
		_, err := conn.ExecContext(ctx, query)
		return err
	}
	if strings.Contains(version, "MariaDB") {
		err = exec("CREATE OR REPLACE TRIGGER " + quoteMySQL(trigger) + " AFTER INSERT ON " + quoteMySQL(m.Table) +
			" FOR EACH ROW " + body)
	} else {
		// MySQL has no CREATE OR REPLACE TRIGGER: the table is locked so
		// no insert falls between the drop and the create.
		err = exec("LOCK TABLES " + quoteMySQL(m.Table) + " WRITE, outbox_events WRITE, outbox_aggregates WRITE")
		if err == nil {
			err = exec("DROP TRIGGER IF EXISTS " + quoteMySQL(trigger))
			if err == nil {
				err = exec("CREATE TRIGGER " + quoteMySQL(trigger) + " AFTER INSERT ON " + quoteMySQL(m.Table) +
					" FOR EACH ROW " + body)
			}
			if unlockErr := exec("UNLOCK TABLES"); err == nil {
				err = unlockErr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("mapping: create trigger %s on %s (the account needs the TRIGGER privilege on it): %w", trigger, m.Table, err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO outbox_mappings (table_name, trigger_name, mapping, installed_at)
		VALUES (?, ?, ?, UTC_TIMESTAMP(6))
		ON DUPLICATE KEY UPDATE trigger_name = VALUES(trigger_name), mapping = VALUES(mapping), installed_at = VALUES(installed_at)`,
		m.Table, trigger, string(record))
	if err != nil {
		return fmt.Errorf("mapping: record the mapping of %s: %w", m.Table, err)
	}
	return nil
}

// mysqlCopy is the body of the MySQL trigger that copies a row of m.
func mysqlCopy(m Mapping, cols map[string]column) string {
	var b strings.Builder
	b.WriteString("BEGIN\n")
	for _, c := range m.lengthChecks() {
		width := heraldWidths[c.target]
		fmt.Fprintf(&b, "  IF CHAR_LENGTH(NEW.%s) > %d THEN\n    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = %s;\n  END IF;\n",
			quoteMySQL(c.name), width, quoteMySQLString(fmt.Sprintf("herald copy of %s: %s is longer than %d characters, the width of herald's %s",
				m.Table, c.name, width, c.target)))
	}
	value := func(col, orElse string) string {
		if col == "" {
			return orElse
		}
		return "NEW." + quoteMySQL(col)
	}
	fields, version := m.fieldsAndVersion("JSON_OBJECT", quoteMySQL, quoteMySQLString)
	occurred := value(m.Timestamp, "NULL")
	if m.Timestamp != "" && strings.EqualFold(cols[m.Timestamp].dataType, "timestamp") {
		// A TIMESTAMP reads in the writer's session time zone; its epoch
		// does not: occurred_at is UTC.
		occurred = "TIMESTAMPADD(MICROSECOND, ROUND(UNIX_TIMESTAMP(" + occurred + ") * 1000000), '1970-01-01 00:00:00')"
	}
	fmt.Fprintf(&b, "  INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, headers, occurred_at, fields)\n"+
		"  VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s);\nEND",
		value(m.ID, ""), value(m.AggregateType, ""), value(m.AggregateID, ""), value(m.EventType, ""), version,
		value(m.Payload, ""), value(m.Headers, "NULL"), occurred, fields)
	return b.String()
}

func installPostgres(ctx context.Context, db *sql.DB, m Mapping, cols map[string]column, record []byte) error {
	trigger := TriggerName(m.Table)
	var schema string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	function := `CREATE OR REPLACE FUNCTION ` + quotePostgres(trigger) + `() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = ` + quotePostgres(schema) + `, pg_temp AS $herald$
` + postgresCopy(m, cols) + `
$herald$`
	if _, err := tx.ExecContext(ctx, function); err != nil {
		return fmt.Errorf("mapping: create function %s: %w", trigger, err)
	}
	if _, err := tx.ExecContext(ctx, "CREATE OR REPLACE TRIGGER "+quotePostgres(trigger)+" AFTER INSERT ON "+
		quotePostgres(m.Table)+" FOR EACH ROW EXECUTE FUNCTION "+quotePostgres(trigger)+"()"); err != nil {
		return fmt.Errorf("mapping: create trigger %s on %s (the role must own the table): %w", trigger, m.Table, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_mappings (table_name, trigger_name, mapping, installed_at)
		VALUES ($1, $2, $3, statement_timestamp())
		ON CONFLICT (table_name) DO UPDATE SET trigger_name = EXCLUDED.trigger_name, mapping = EXCLUDED.mapping,
		  installed_at = EXCLUDED.installed_at`, m.Table, trigger, string(record)); err != nil {
		return fmt.Errorf("mapping: record the mapping of %s: %w", m.Table, err)
	}
	return tx.Commit()
}

// postgresCopy is the body of the PostgreSQL function that copies a row of
// m, each value cast to its outbox_events column's type.
func postgresCopy(m Mapping, cols map[string]column) string {
	var b strings.Builder
	b.WriteString("BEGIN\n")
	for _, c := range m.lengthChecks() {
		width := heraldWidths[c.target]
		fmt.Fprintf(&b, "  IF char_length(NEW.%s) > %d THEN\n    RAISE EXCEPTION %s USING ERRCODE = 'check_violation';\n  END IF;\n",
			quotePostgres(c.name), width, quotePostgresString(fmt.Sprintf("herald copy of %s: %s is longer than %d characters, the width of herald's %s",
				m.Table, c.name, width, c.target)))
	}
	value := func(col, cast, orElse string) string {
		if col == "" {
			return orElse
		}
		v := "NEW." + quotePostgres(col)
		switch {
		case cast == "occurred_at" && cols[col].dataType == "timestamp without time zone":
			return v + " AT TIME ZONE 'UTC'" // a time without a zone is read as UTC, as Debezium reads it
		case cast == "occurred_at":
			return v
		}
		return v + "::" + cast
	}
	fields, version := m.fieldsAndVersion("jsonb_build_object", quotePostgres, quotePostgresString)
	fmt.Fprintf(&b, "  INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, headers, occurred_at, fields)\n"+
		"  VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s);\n  RETURN NULL;\nEND;",
		value(m.ID, "text::uuid", ""), value(m.AggregateType, "text", ""), value(m.AggregateID, "text", ""),
		value(m.EventType, "text", ""), version, value(m.Payload, "text::json", ""), value(m.Headers, "text::jsonb", "NULL"),
		value(m.Timestamp, "occurred_at", "NULL"), fields)
	return b.String()
}

// ReadMappings returns the foreign table mappings installed in db, by
// table.
func ReadMappings(ctx context.Context, db *sql.DB) (map[string]InstalledMapping, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name, trigger_name, mapping, installed_at FROM outbox_mappings`)
	if err != nil {
		return nil, fmt.Errorf("read outbox_mappings: %w", err)
	}
	defer rows.Close()
	out := map[string]InstalledMapping{}
	for rows.Next() {
		var (
			im  InstalledMapping
			raw []byte
		)
		if err := rows.Scan(&im.Table, &im.Trigger, &raw, &im.InstalledAt); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &im.Mapping); err != nil {
			return nil, fmt.Errorf("read outbox_mappings: the mapping of %s: %w", im.Table, err)
		}
		im.InstalledAt = im.InstalledAt.UTC()
		out[im.Table] = im
	}
	return out, rows.Err()
}

// DropMapping removes the trigger that copies table's inserts (and, on
// PostgreSQL, its function) and its row in outbox_mappings. The copies
// already made stay in outbox_events, to be published.
func DropMapping(ctx context.Context, db *sql.DB, table string) error {
	kind, err := serverKind(ctx, db)
	if err != nil {
		return err
	}
	mappings, err := ReadMappings(ctx, db)
	if err != nil {
		return err
	}
	im, ok := mappings[table]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchMapping, table)
	}
	if kind == serverPostgres {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, stmt := range []string{
			"DROP TRIGGER IF EXISTS " + quotePostgres(im.Trigger) + " ON " + quotePostgres(table),
			"DROP FUNCTION IF EXISTS " + quotePostgres(im.Trigger) + "()",
		} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("drop the copy of %s: %w", table, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM outbox_mappings WHERE table_name = $1", table); err != nil {
			return err
		}
		return tx.Commit()
	}
	if _, err := db.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+quoteMySQL(im.Trigger)); err != nil {
		return fmt.Errorf("drop the copy of %s: %w", table, err)
	}
	_, err = db.ExecContext(ctx, "DELETE FROM outbox_mappings WHERE table_name = ?", table)
	return err
}

// fieldsAndVersion are the copy's expressions of outbox_events.fields (a
// JSON object of m.Fields built by the server's function object, NULL
// without fields) and of schema_version (1 without a column), in a
// dialect's quoting.
func (m Mapping) fieldsAndVersion(object string, quote, quoteString func(string) string) (fields, version string) {
	fields, version = "NULL", "1"
	if len(m.Fields) > 0 {
		parts := make([]string, len(m.Fields))
		for i, f := range m.Fields {
			parts[i] = quoteString(f) + ", NEW." + quote(f)
		}
		fields = object + "(" + strings.Join(parts, ", ") + ")"
	}
	if m.SchemaVersion != "" {
		version = "COALESCE(NEW." + quote(m.SchemaVersion) + ", 1)"
	}
	return fields, version
}

func quoteMySQL(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func quoteMySQLString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

func quotePostgres(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quotePostgresString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
