package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// The cost of the SQL contract (docs/writers.md): one transaction of one
// business row and one 1 KiB event, written four ways, interleaved
// transaction by transaction so that every way sees the same background
// load:
//
//	bare       the business row and an event row in a table of the same
//	           columns without herald's trigger: what an outbox costs
//	           without herald
//	go-writer  herald's outbox.Writer (through the trigger)
//	plain-sql  the SQL contract's INSERT, as any language issues it
//	           (through the trigger)
//	counter    the Go writer's former path: a client-side upsert of the
//	           aggregate's counter, then the event with its number (the
//	           trigger keeps a given number), for comparison
//	debezium-table  the business row and an event row in Debezium's outbox
//	           table (id, aggregatetype, aggregateid, type, payload):
//	           what a team on Debezium's outbox router pays
//	foreign-copy    the same into the same table that herald copies
//	           (herald migrate up --mapping, docs/from-debezium.md): what
//	           the team pays once it relays with herald
//
// `bench writers` prints the table and writes docs/benchmarks/writers.md.

// WriteCostConfig shapes one run of `bench writers`.
type WriteCostConfig struct {
	// Rounds is how many interleaved rounds run; each way's figure is the
	// median of its round medians. Defaults to 7.
	Rounds int
	// TxPerRound is how many transactions each way writes per round.
	// Defaults to 200.
	TxPerRound int
	// PayloadBytes is the event's payload size. Defaults to 1,024.
	PayloadBytes int
	// MySQLAddr is MariaDB's address. Defaults to 127.0.0.1:3306.
	MySQLAddr string
	// PostgresURL is PostgreSQL's, a server URL (the run creates its own
	// database there). Defaults to the local stack's.
	PostgresURL string
	// Out is the directory writers.md goes to. Defaults to
	// ../docs/benchmarks.
	Out string
}

func (c WriteCostConfig) withDefaults() WriteCostConfig {
	if c.Rounds == 0 {
		c.Rounds = 7
	}
	if c.TxPerRound == 0 {
		c.TxPerRound = 200
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = 1024
	}
	if c.MySQLAddr == "" {
		c.MySQLAddr = "127.0.0.1:3306"
	}
	if c.PostgresURL == "" {
		c.PostgresURL = localstack.PostgresURL()
	}
	if c.Out == "" {
		c.Out = Config{}.withDefaults().Out
	}
	return c
}

func (c WriteCostConfig) validate() error {
	var errs []error
	if c.Rounds < 1 {
		errs = append(errs, &ConfigError{"rounds", fmt.Sprintf("must be at least 1, got %d", c.Rounds)})
	}
	if c.TxPerRound < 1 {
		errs = append(errs, &ConfigError{"tx", fmt.Sprintf("must be at least 1, got %d", c.TxPerRound)})
	}
	if c.PayloadBytes < 32 || c.PayloadBytes > outbox.MaxPayloadBytesDefault {
		errs = append(errs, &ConfigError{"payload-bytes", fmt.Sprintf("must be between 32 and %d, got %d", outbox.MaxPayloadBytesDefault, c.PayloadBytes)})
	}
	return errors.Join(errs...)
}

// writeCostEnv names the BENCH_* variable of each of writers' flags.
var writeCostEnv = map[string]string{"rounds": "BENCH_WRITERS_ROUNDS", "tx": "BENCH_WRITERS_TX", "payload-bytes": "BENCH_PAYLOAD_BYTES"}

// writersCommand parses `bench writers`' flags and runs it.
func writersCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("writers", flag.ContinueOnError)
	var cfg WriteCostConfig
	def := cfg.withDefaults()
	fs.IntVar(&cfg.Rounds, "rounds", def.Rounds, "interleaved rounds")
	fs.IntVar(&cfg.TxPerRound, "tx", def.TxPerRound, "transactions per way and round")
	fs.IntVar(&cfg.PayloadBytes, "payload-bytes", def.PayloadBytes, "the event's payload size")
	fs.StringVar(&cfg.MySQLAddr, "mysql-addr", def.MySQLAddr, "MariaDB address (user herald/herald)")
	fs.StringVar(&cfg.PostgresURL, "postgres-url", def.PostgresURL, "PostgreSQL server URL")
	fs.StringVar(&cfg.Out, "out", def.Out, "directory of writers.md")
	if err := applyEnv(fs, writeCostEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	start := time.Now()
	var results []writeCostResult
	for _, server := range []string{"mariadb", "postgres"} {
		r, err := measureWriteCost(ctx, cfg, server)
		if err != nil {
			return fmt.Errorf("%s: %w", server, err)
		}
		results = append(results, r)
	}
	table := writeCostTable(cfg, results, time.Since(start))
	fmt.Print(table)
	return os.WriteFile(filepath.Join(cfg.Out, "writers.md"), []byte(table), 0o644)
}

// writeWays are the ways, in the order they take turns.
var writeWays = []string{"bare", "go-writer", "plain-sql", "counter", "debezium-table", "foreign-copy"}

// dbzOutboxDDL is Debezium's outbox table, per server, %s its name.
var dbzOutboxDDL = map[bool]string{
	false: "CREATE TABLE %s (id CHAR(36) NOT NULL PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL, aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON) ENGINE=InnoDB",
	true:  "CREATE TABLE %s (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)",
}

// writeCostResult is one database's figures: per way, the median of the
// round medians and the lowest and highest round median, in µs.
type writeCostResult struct {
	Server           string
	Median, Low, Top map[string]float64
}

// writeCostDB is one database the run created, with its pool.
type writeCostDB struct {
	db       *sql.DB
	dialect  store.Dialect
	postgres bool
	drop     func()
}

// openWriteCostDB creates a database of its own on server, migrated, with
// the business table and the bare event table.
func openWriteCostDB(ctx context.Context, cfg WriteCostConfig, server string) (*writeCostDB, error) {
	var b [4]byte
	rand.Read(b[:])
	name := "herald_bench_writers_" + hex.EncodeToString(b[:])
	var adminDSN, dsn string
	var dialect store.Dialect
	if server == "postgres" {
		u, err := url.Parse(cfg.PostgresURL)
		if err != nil {
			return nil, fmt.Errorf("--postgres-url: %w", err)
		}
		adminDSN = u.String()
		u.Path = "/" + name
		dsn, dialect = u.String(), postgres.Dialect{}
	} else {
		adminDSN = Config{MySQLAddr: cfg.MySQLAddr}.dsn("")
		dsn, dialect = Config{MySQLAddr: cfg.MySQLAddr}.dsn(name), mysql.Dialect{}
	}
	open := func(dsn string) (*sql.DB, error) {
		if server == "postgres" {
			return postgres.Open(ctx, dsn)
		}
		return mysql.Open(ctx, dsn)
	}
	admin, err := open(adminDSN)
	if err != nil {
		return nil, err
	}
	create := "CREATE DATABASE " + name
	if _, err := admin.ExecContext(ctx, create); err != nil {
		admin.Close()
		return nil, err
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := database.DropDatabase(dctx, admin, dialect, name); err != nil {
			fmt.Fprintf(os.Stderr, "bench writers: drop database %s: %v\n", name, err)
		}
		admin.Close()
	}
	db, err := open(dsn)
	if err != nil {
		drop()
		return nil, err
	}
	w := &writeCostDB{db: db, dialect: dialect, postgres: server == "postgres", drop: func() { db.Close(); drop() }}
	if _, err := migrations.Herald.Up(ctx, db); err != nil {
		w.drop()
		return nil, err
	}
	ddl := []string{
		"CREATE TABLE bench_orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer_id BIGINT NOT NULL, total_amount DECIMAL(12,2) NOT NULL, status VARCHAR(16) NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE bench_events LIKE outbox_events", // the columns and indexes, not the trigger
	}
	if w.postgres {
		ddl = []string{
			"CREATE TABLE bench_orders (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, customer_id bigint NOT NULL, total_amount numeric(12,2) NOT NULL, status varchar(16) NOT NULL)",
			"CREATE TABLE bench_events (LIKE outbox_events INCLUDING ALL)",
		}
	}
	ddl = append(ddl, fmt.Sprintf(dbzOutboxDDL[w.postgres], "bench_dbz_outbox"), fmt.Sprintf(dbzOutboxDDL[w.postgres], "bench_foreign_outbox"))
	for _, q := range ddl {
		if _, err := db.ExecContext(ctx, q); err != nil {
			w.drop()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := migrations.InstallMapping(ctx, db, migrations.Mapping{Table: "bench_foreign_outbox"}); err != nil {
		w.drop()
		return nil, err
	}
	return w, nil
}

// measureWriteCost runs the rounds on one database.
func measureWriteCost(ctx context.Context, cfg WriteCostConfig, server string) (writeCostResult, error) {
	w, err := openWriteCostDB(ctx, cfg, server)
	if err != nil {
		return writeCostResult{}, err
	}
	defer w.drop()
	writer, err := outbox.NewWriter(outbox.Config{Dialect: w.dialect})
	if err != nil {
		return writeCostResult{}, err
	}
	rounds := map[string][]float64{}
	for round := range cfg.Rounds + 1 { // round 0 warms the pools and caches up and is not counted
		times := map[string][]float64{}
		for range cfg.TxPerRound {
			for _, way := range writeWays {
				start := time.Now()
				if err := w.writeOne(ctx, writer, way, cfg.PayloadBytes); err != nil {
					return writeCostResult{}, fmt.Errorf("%s: %w", way, err)
				}
				times[way] = append(times[way], float64(time.Since(start).Microseconds()))
			}
		}
		if round > 0 {
			for _, way := range writeWays {
				rounds[way] = append(rounds[way], medianOf(times[way]))
			}
		}
	}
	r := writeCostResult{Server: server, Median: map[string]float64{}, Low: map[string]float64{}, Top: map[string]float64{}}
	for _, way := range writeWays {
		r.Median[way], r.Low[way], r.Top[way] = medianOf(rounds[way]), slices.Min(rounds[way]), slices.Max(rounds[way])
	}
	return r, nil
}

// writeOne writes one business row and one event the way way does, in one
// transaction.
func (w *writeCostDB) writeOne(ctx context.Context, writer *outbox.Writer, way string, payloadBytes int) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var orderID int64
	if w.postgres {
		err = tx.QueryRowContext(ctx, "INSERT INTO bench_orders (customer_id, total_amount, status) VALUES ($1, $2, 'created') RETURNING id", 42, "199.00").Scan(&orderID)
	} else {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, "INSERT INTO bench_orders (customer_id, total_amount, status) VALUES (?, ?, 'created')", 42, "199.00"); err == nil {
			orderID, err = res.LastInsertId()
		}
	}
	if err != nil {
		return err
	}
	aggregate := strconv.FormatInt(orderID, 10)
	payload := costPayload(orderID, payloadBytes)
	id := uuid.Must(uuid.NewV7()).String()
	q := func(mysql, postgres string) string {
		if w.postgres {
			return postgres
		}
		return mysql
	}
	switch way {
	case "bare":
		_, err = tx.ExecContext(ctx, q(
			"INSERT INTO bench_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, occurred_at, next_attempt_at) VALUES (?, 'order', ?, 1, 'order.created', 1, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
			"INSERT INTO bench_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, occurred_at, next_attempt_at) VALUES ($1, 'order', $2, 1, 'order.created', 1, $3, statement_timestamp(), statement_timestamp())"),
			id, aggregate, payload)
	case "go-writer":
		_, err = writer.Add(ctx, tx, outbox.Event{AggregateType: "order", AggregateID: aggregate, EventType: "order.created",
			SchemaVersion: 1, Payload: json.RawMessage(payload)})
	case "plain-sql":
		_, err = tx.ExecContext(ctx, q(
			"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES (?, 'order', ?, 'order.created', 1, ?)",
			"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES ($1, 'order', $2, 'order.created', 1, $3)"),
			id, aggregate, payload)
	case "counter":
		var seq int64
		if w.postgres {
			err = tx.QueryRowContext(ctx, `INSERT INTO outbox_aggregates AS a (aggregate_type, aggregate_id, last_seq) VALUES ('order', $1, 1)
				ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_seq = a.last_seq + 1 RETURNING a.last_seq`, aggregate).Scan(&seq)
		} else {
			var res sql.Result
			if res, err = tx.ExecContext(ctx, `INSERT INTO outbox_aggregates (aggregate_type, aggregate_id, last_seq) VALUES ('order', ?, LAST_INSERT_ID(1))
				ON DUPLICATE KEY UPDATE last_seq = LAST_INSERT_ID(last_seq + 1)`, aggregate); err == nil {
				seq, err = res.LastInsertId()
			}
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, q(
				"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload) VALUES (?, 'order', ?, ?, 'order.created', 1, ?)",
				"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload) VALUES ($1, 'order', $2, $3, 'order.created', 1, $4)"),
				id, aggregate, seq, payload)
		}
	case "debezium-table", "foreign-copy":
		table := map[string]string{"debezium-table": "bench_dbz_outbox", "foreign-copy": "bench_foreign_outbox"}[way]
		_, err = tx.ExecContext(ctx, q(
			"INSERT INTO "+table+" (id, aggregatetype, aggregateid, type, payload) VALUES (?, 'order', ?, 'order.created', ?)",
			"INSERT INTO "+table+" (id, aggregatetype, aggregateid, type, payload) VALUES ($1, 'order', $2, 'order.created', $3)"),
			id, aggregate, payload)
	default:
		return fmt.Errorf("unknown way %q", way)
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

// costPayload is an order.created payload of size bytes.
func costPayload(orderID int64, size int) string {
	head := fmt.Sprintf(`{"order_id":%d,"customer_id":42,"total_amount":"199.00","note":"`, orderID)
	pad := size - len(head) - 2
	if pad < 0 {
		pad = 0
	}
	return head + strings.Repeat("x", pad) + `"}`
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// writeCostTable is the Markdown report of a run.
func writeCostTable(cfg WriteCostConfig, results []writeCostResult, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The cost of the SQL contract\n\n")
	fmt.Fprintf(&b, "Generated by `cd bench && go run . writers` (`make bench`): %d rounds of %d transactions per way, "+
		"interleaved transaction by transaction; one business row and one %d-byte event per transaction, each a new aggregate; "+
		"µs per transaction, the median of the round medians (lowest and highest round median in brackets); %s.\n\n",
		cfg.Rounds, cfg.TxPerRound, cfg.PayloadBytes, took.Round(time.Second))
	b.WriteString("| database | (a) bare, no herald | (b) Go writer | (c) SQL contract (trigger) | counter (the Go writer before 00006) | (b) / (a) | (c) / (a) | (c) / (b) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	cellOf := func(r writeCostResult, way string) string {
		return fmt.Sprintf("%.0f (%.0f-%.0f)", r.Median[way], r.Low[way], r.Top[way])
	}
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %+.0f %% | %+.0f %% | %+.0f %% |\n", r.Server,
			cellOf(r, "bare"), cellOf(r, "go-writer"), cellOf(r, "plain-sql"), cellOf(r, "counter"),
			100*(r.Median["go-writer"]/r.Median["bare"]-1), 100*(r.Median["plain-sql"]/r.Median["bare"]-1),
			100*(r.Median["plain-sql"]/r.Median["go-writer"]-1))
	}
	b.WriteString("\nA foreign outbox table (docs/from-debezium.md): the same transaction into Debezium's outbox table, " +
		"(d) as a team on Debezium's outbox router writes it, (e) the same table copied by herald (herald migrate up --mapping).\n\n")
	b.WriteString("| database | (d) Debezium's table | (e) Debezium's table, copied by herald | (e) / (d) | (e) / (c) |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %+.0f %% | %+.0f %% |\n", r.Server, cellOf(r, "debezium-table"), cellOf(r, "foreign-copy"),
			100*(r.Median["foreign-copy"]/r.Median["debezium-table"]-1), 100*(r.Median["foreign-copy"]/r.Median["plain-sql"]-1))
	}
	return b.String()
}
