package drill

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/kafka"
)

// Defaults of Config's fields.
const (
	// EventsDefault is Config.Events's default.
	EventsDefault = 300
	// RateDefault is Config.Rate's default.
	RateDefault = 20
	// ConcurrencyDefault is Config.Concurrency's default.
	ConcurrencyDefault = 4
	// DBPrefixDefault is Config.DBPrefix's default.
	DBPrefixDefault = "herald_drill_"
	// LeaseDefault is Config.Lease's default.
	LeaseDefault = 10 * time.Second
	// SessionTimeoutDefault is Config.SessionTimeout's default.
	SessionTimeoutDefault = 10 * time.Second
	// OutageDefault is Config.Outage's default.
	OutageDefault = 10 * time.Second
	// RestartDelayDefault is Config.RestartDelay's default.
	RestartDelayDefault = time.Second
	// TimeoutDefault is Config.Timeout's default.
	TimeoutDefault = 2 * time.Minute
	// SourcePoll, SourceBinlog and SourceWAL are the relays' --source:
	// Config.Source.
	SourcePoll   = "poll"
	SourceBinlog = "binlog"
	SourceWAL    = "wal"
	// SourceStream, as a Drill's Source, is either change stream: binlog
	// or wal.
	SourceStream = "stream"
	// InitialStock is every SKU's stock when a drill starts.
	InitialStock = 1_000_000
	// ConsumerName is the inventory's inbox consumer name in drills.
	ConsumerName = "inventory"
)

// Config shapes a drill run. BinDir, DatabaseURL, Brokers and RunDir are
// required.
type Config struct {
	// BinDir holds the herald, orders, inventory and warehouse binaries
	// (`make build` puts them into bin/). Required.
	BinDir string
	// DatabaseURL reaches the server: a postgres:// URL for PostgreSQL, else
	// a MySQL/MariaDB DSN. Each drill creates its own databases there (the
	// URL's database is not used). Required.
	DatabaseURL string
	// Brokers are Kafka's seed brokers. Required.
	Brokers []string
	// Kafka is how every Kafka client of the drill connects: its own, the
	// relays, the inventory consumer and kcat. Defaults to plaintext.
	Kafka kafka.Security
	// DatabaseOptions are the options of every database connection of the
	// drill and its services (TLS to MySQL, the password). Defaults to none.
	DatabaseOptions database.ConnOptions
	// RunDir receives one folder of logs per drill. Required.
	RunDir string
	// Source is the relays' --source: SourcePoll (the default),
	// SourceBinlog (MariaDB/MySQL only) or SourceWAL (PostgreSQL only). It
	// decides which drills apply (Drill.Source).
	Source string
	// DBPrefix starts the names of the drills' databases and topics:
	// PREFIX<drill>_orders, _inventory, _warehouse. Defaults to
	// "herald_drill_".
	DBPrefix string
	// Events is how many orders each drill creates. Defaults to 300.
	Events int
	// Rate is orders per second. Defaults to 20.
	Rate float64
	// Concurrency is the number of HTTP clients. Defaults to 4.
	Concurrency int
	// Lease is the relays' --lease: how soon a dead relay's batch is taken
	// over. Defaults to 10 s.
	Lease time.Duration
	// SessionTimeout is the consumer group session timeout: how soon a dead
	// consumer's partitions are handed over. Defaults to 10 s.
	SessionTimeout time.Duration
	// Outage is how long a broker or the database stays down. Defaults to
	// 10 s.
	Outage time.Duration
	// RestartDelay is the supervisor's pause before restarting a process
	// that exited. Defaults to 1 s.
	RestartDelay time.Duration
	// Timeout bounds each drill's wait for the pipeline to drain after the
	// load and the fault. Defaults to 2 min.
	Timeout time.Duration
	// RestartKafka is a shell command that stops (argument "stop") or starts
	// (argument "start") one Kafka broker. Defaults to
	// StackDir/node.sh stop|start kafka-N, for the broker that leads
	// partition 0 of the drill's topic, when the brokers are local.
	RestartKafka string
	// RestartMySQL is the same for the database server, MariaDB or
	// PostgreSQL. Defaults to StackDir/node.sh stop|start mariadb (or
	// postgres) when the server is local.
	RestartMySQL string
	// StackDir holds the local stack's node.sh. Defaults to BinDir/../stack.
	StackDir string
	// Keep keeps the databases and topic of drills that passed (those of
	// failed drills are always kept). Defaults to false.
	Keep bool
	// Out receives progress lines. Defaults to io.Discard.
	Out io.Writer
	// Command is the command line, for the report.
	Command string
}

func (c Config) withDefaults() Config {
	if c.Source == "" {
		c.Source = SourcePoll
	}
	if c.DBPrefix == "" {
		c.DBPrefix = DBPrefixDefault
	}
	if c.Events == 0 {
		c.Events = EventsDefault
	}
	if c.Rate == 0 {
		c.Rate = RateDefault
	}
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.Lease == 0 {
		c.Lease = LeaseDefault
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = SessionTimeoutDefault
	}
	if c.Outage == 0 {
		c.Outage = OutageDefault
	}
	if c.RestartDelay == 0 {
		c.RestartDelay = RestartDelayDefault
	}
	if c.Timeout == 0 {
		c.Timeout = TimeoutDefault
	}
	if c.StackDir == "" && c.BinDir != "" {
		c.StackDir = filepath.Join(c.BinDir, "..", "stack")
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	return c
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Field + ": " + e.Msg }

// Binaries are the programs a drill runs, found in Config.BinDir.
var Binaries = []string{"herald", "orders", "inventory", "warehouse"}

func (c Config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{field, fmt.Sprintf(format, args...)})
	}
	switch {
	case c.BinDir == "":
		bad("BinDir", "required")
	default:
		for _, b := range Binaries {
			if st, err := os.Stat(filepath.Join(c.BinDir, b)); err != nil || st.IsDir() {
				bad("BinDir", "no %s binary in %s (make build puts them into bin/)", b, c.BinDir)
			}
		}
	}
	if c.DatabaseURL == "" {
		bad("DatabaseURL", "required")
	} else if err := database.Check(c.DatabaseURL, database.ConnOptions{}); err != nil {
		bad("DatabaseURL", "%v", err)
	}
	switch {
	case c.Source != SourcePoll && c.Source != SourceBinlog && c.Source != SourceWAL:
		bad("Source", "%q: want %s, %s or %s", c.Source, SourcePoll, SourceBinlog, SourceWAL)
	case c.Source == SourceBinlog && database.IsPostgres(c.DatabaseURL):
		bad("Source", "%s reads the MariaDB/MySQL binlog; on PostgreSQL use %s (or %s)", SourceBinlog, SourceWAL, SourcePoll)
	case c.Source == SourceWAL && !database.IsPostgres(c.DatabaseURL):
		bad("Source", "%s reads PostgreSQL's WAL; on MariaDB/MySQL use %s (or %s)", SourceWAL, SourceBinlog, SourcePoll)
	}
	if len(c.Brokers) == 0 {
		bad("Brokers", "required")
	}
	if c.RunDir == "" {
		bad("RunDir", "required")
	}
	if !validName(c.DBPrefix) || len(c.DBPrefix) > 27 {
		bad("DBPrefix", "%q: want at most 27 letters, digits and _ (PREFIX + drill + _inventory must fit 64 characters)", c.DBPrefix)
	}
	if c.Events < 10 {
		bad("Events", "at least 10, got %d", c.Events)
	}
	if c.Rate <= 0 {
		bad("Rate", "must be positive, got %v", c.Rate)
	}
	if c.Concurrency < 1 {
		bad("Concurrency", "at least 1, got %d", c.Concurrency)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Lease", c.Lease}, {"SessionTimeout", c.SessionTimeout}, {"Outage", c.Outage}, {"RestartDelay", c.RestartDelay}, {"Timeout", c.Timeout}} {
		if d.v < 0 {
			bad(d.name, "must not be negative, got %v", d.v)
		}
	}
	if c.SessionTimeout < 6*time.Second {
		bad("SessionTimeout", "at least 6s (the brokers' group.min.session.timeout.ms), got %v", c.SessionTimeout)
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// faultKind says how a drill injects its fault.
type faultKind int

const (
	// faultNone: the demo.
	faultNone faultKind = iota
	// faultRelaysLate: no relay runs while the orders commit.
	faultRelaysLate
	// faultFailpoint: a process dies by SIGKILL at a failpoint.
	faultFailpoint
	// faultKafka: one broker (or the only one) is stopped and started.
	faultKafka
	// faultMySQL: the database server is stopped and started.
	faultMySQL
	// faultSlotDropped: the WAL source's replication slot is dropped
	// under the streaming leader.
	faultSlotDropped
)

// Drill is one fault drill.
type Drill struct {
	// Name is what --drill takes.
	Name string
	// Window is the crash window of SPEC section 9 the drill covers (1:
	// committed, relay not run yet; 2: acknowledged, not marked; 3:
	// consumer committed, offset not), or 0.
	Window int
	// Fault says what is done to the pipeline.
	Fault string
	// Proves says what passing shows.
	Proves string

	// Source, when set, is the only relay source the drill applies to
	// (its failpoint is on that source's path); SourceStream is both change
	// streams.
	Source string

	kind faultKind
	// target is the failpoint's service; failpoint its name (one of
	// package failpoint's constants); crashAt the hit that crashes, given
	// the orders of the drill; evidence what proves the crash happened in
	// the drill's window (evidence.go).
	target    string
	failpoint string
	crashAt   func(orders int) int
	evidence  evidence
}

// AppliesTo says whether the drill runs with relays of source.
func (d Drill) AppliesTo(source string) bool {
	return d.Source == "" || d.Source == source || d.Source == SourceStream && (source == SourceBinlog || source == SourceWAL)
}

// FailpointSpec is the HERALD_FAILPOINTS value of a failpoint drill.
func (d Drill) FailpointSpec(orders int) string {
	if d.kind != faultFailpoint {
		return ""
	}
	return fmt.Sprintf("%s=crash@%d", d.failpoint, d.crashAt(orders))
}

func fixed(n int) func(int) int { return func(int) int { return n } }

// third crashes about a third into the load.
func third(orders int) int { return max(2, orders/3) }

// Catalog lists every drill, in the order `--drill all` runs them.
var Catalog = []Drill{
	{
		Name: "committed-relay-not-run", Window: 1, kind: faultRelaysLate,
		Fault:  "no relay runs while the orders commit; both start once the load is over",
		Proves: "events committed while no relay runs are published afterwards: nothing lost, nothing published early",
	},
	{
		Name: "relay-crash-after-ack", Window: 2, Source: SourcePoll, kind: faultFailpoint,
		target: "relay-1", failpoint: failpoint.RelayAfterAckBeforeMark, crashAt: fixed(5), evidence: orphansSentAgain,
		Fault:  "relay-1 SIGKILLed after Kafka acknowledged its 5th batch, before marking it published",
		Proves: "an acknowledged but unmarked batch is published again by another lease: duplicates, never losses; the inbox absorbs them",
	},
	{
		Name: "consumer-crash-after-commit", Window: 3, kind: faultFailpoint,
		target: "inventory", failpoint: failpoint.ConsumerAfterCommitBeforeOffset, crashAt: third, evidence: inboxDroppedRedelivery,
		Fault:  "inventory SIGKILLed after its database commit, before the Kafka offset commit (a third into the load)",
		Proves: "a record redelivered after the consumer's commit is dropped by the inbox: stock reserved once, one warehouse effect",
	},
	{
		Name: "kafka-broker-restart", kind: faultKafka,
		Fault:  "a Kafka broker stopped mid-load for the outage, then started (one-broker layout: the whole cluster)",
		Proves: "producers and consumers ride out a broker restart: nothing lost, order kept, no double effect",
	},
	{
		Name: "database-restart", kind: faultMySQL,
		Fault:  "the database server stopped mid-load for the outage, then started",
		Proves: "every service survives a database restart and reconnects; only requests during the outage fail; nothing committed is lost",
	},
	{
		Name: "consumer-crash-before-call", kind: faultFailpoint,
		target: "inventory", failpoint: failpoint.ConsumerAfterCommitBeforeCall, crashAt: third, evidence: warehouseCallPending,
		Fault:  "inventory SIGKILLed after its commit, before calling the warehouse (a third into the load)",
		Proves: "a warehouse call lost with the process is made by the sweeper after the restart, and applied once (idempotency key)",
	},
	{
		Name: "relay-crash-after-claim", Source: SourcePoll, kind: faultFailpoint,
		target: "relay-1", failpoint: failpoint.RelayAfterClaim, crashAt: fixed(5), evidence: orphansSentOnce,
		Fault:  "relay-1 SIGKILLed right after committing its 5th claim, before any Kafka I/O",
		Proves: "a dead relay's lease expires and another relay publishes its batch: nothing lost, order kept",
	},
	{
		Name: "stream-crash-after-ack", Window: 2, Source: SourceStream, kind: faultFailpoint,
		target: "relay-1", failpoint: failpoint.StreamAfterAckBeforeCheckpoint, crashAt: fixed(5), evidence: orphansSentAgain,
		Fault:  "relay-1, the stream's leader, SIGKILLed after Kafka acknowledged its 5th streamed batch, before marking it and saving the checkpoint",
		Proves: "the next leader resumes at the last checkpoint and publishes the unmarked batch again: duplicates, never losses; the inbox absorbs them",
	},
	{
		Name: "stream-crash-after-read", Source: SourceStream, kind: faultFailpoint,
		target: "relay-1", failpoint: failpoint.StreamAfterRead, crashAt: fixed(5), evidence: orphansSentOnce,
		Fault:  "relay-1, the stream's leader, SIGKILLed right after reading its 5th batch from the binlog or the WAL, before any Kafka I/O",
		Proves: "the stream's lease expires and the next leader reads the batch again from the checkpoint: nothing lost, order kept",
	},
	{
		Name: "stream-slot-dropped", Source: SourceWAL, kind: faultSlotDropped,
		Fault:  "the replication slot dropped under the streaming leader mid-load (herald stream drop --force: its connection ended first)",
		Proves: "the leader finds its position gone, sweeps the outbox through the polling path, creates the slot anew and streams again: nothing lost, order kept; the inbox absorbs the duplicates",
	},
	{
		Name: "orders-crash-after-commit", Window: 1, kind: faultFailpoint,
		target: "orders", failpoint: failpoint.OrdersAfterCommit, crashAt: third, evidence: orderCommittedUnanswered,
		Fault:  "the orders API SIGKILLed after committing an order, before answering (a third into the load)",
		Proves: "an order the client never heard about is committed with its event, and the event flows like any other",
	},
}

// Lookup returns the drills named by spec for relays of source (a
// Config.Source; "" is SourcePoll): names separated by commas, where "all"
// stands for every drill that applies to the source and a name after "-"
// leaves that drill out of those before it ("all,-kafka-broker-restart").
func Lookup(spec, source string) ([]Drill, error) {
	if source == "" {
		source = SourcePoll
	}
	var out []Drill
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "" || name == "all":
			for _, d := range Catalog {
				if d.AppliesTo(source) && !slices.ContainsFunc(out, func(o Drill) bool { return o.Name == d.Name }) {
					out = append(out, d)
				}
			}
		case strings.HasPrefix(name, "-"):
			d, err := catalogDrill(strings.TrimPrefix(name, "-"))
			if err != nil {
				return nil, err
			}
			out = slices.DeleteFunc(out, func(o Drill) bool { return o.Name == d.Name })
		default:
			d, err := catalogDrill(name)
			if err != nil {
				return nil, err
			}
			if !d.AppliesTo(source) {
				want := d.Source
				if want == SourceStream {
					want = SourceBinlog + " or " + SourceWAL
				}
				return nil, fmt.Errorf("drill %q runs with --source %s, not %s", name, want, source)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// catalogDrill is the drill of the catalog called name.
func catalogDrill(name string) (Drill, error) {
	if name == "mariadb-restart" { // its name before PostgreSQL
		name = "database-restart"
	}
	i := slices.IndexFunc(Catalog, func(d Drill) bool { return d.Name == name })
	if i < 0 {
		names := make([]string, len(Catalog))
		for i, d := range Catalog {
			names[i] = d.Name
		}
		return Drill{}, fmt.Errorf("unknown drill %q (known: all, %s)", name, strings.Join(names, ", "))
	}
	return Catalog[i], nil
}
