package stock

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
)

// Env's defaults: the servers of herald's local stack (`make up`).
const (
	// DSNDefault is Env.DSN's default: the local stack's MariaDB.
	DSNDefault = "herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC"
	// BrokersDefault is the default of Env.Config.Brokers: the local
	// stack's Kafka.
	BrokersDefault = "127.0.0.1:9092"
)

// Env is the inventory binary's configuration, read from HERALD_*
// variables (see the command's documentation for the list).
type Env struct {
	// DSN is the inventory's database: a postgres:// URL, or a MySQL DSN.
	DSN string
	// DatabaseOptions are the database connection's TLS (MySQL only) and
	// password settings (database.ConnOptionsFromEnv: HERALD_MYSQL_TLS*,
	// HERALD_MYSQL_PASSWORD[_FILE]).
	DatabaseOptions database.ConnOptions
	// Kafka is how the consumer connects to Kafka (kafka.SecurityFromEnv:
	// HERALD_KAFKA_TLS*, HERALD_KAFKA_SASL_*).
	Kafka kafka.Security
	// Seed is the stock created at start for SKUs that have none.
	Seed map[string]int64
	// Config is the service's configuration, without DB.
	Config Config
	// LogLevel is the binary's log level (HERALD_LOG_LEVEL: debug, info,
	// warn or error). Defaults to info, also for a value it does not know.
	LogLevel slog.Level
}

// SeedDefault creates SKU-1 .. SKU-20 with 1,000,000 units each.
func SeedDefault() map[string]int64 {
	m := map[string]int64{}
	for i := 1; i <= 20; i++ {
		m[fmt.Sprintf("SKU-%d", i)] = DefaultStockDefault
	}
	return m
}

// EnvFrom reads Env with getenv (os.Getenv in the binary); an invalid value
// is an error naming its variable.
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{DSN: DSNDefault, Seed: SeedDefault()}
	if err := e.LogLevel.UnmarshalText([]byte(getenv("HERALD_LOG_LEVEL"))); err != nil {
		e.LogLevel = slog.LevelInfo
	}
	for _, name := range []string{"HERALD_MYSQL_DSN", "HERALD_DATABASE_URL"} { // the alias, then the name
		if v := getenv(name); v != "" {
			e.DSN = v
		}
	}
	e.DatabaseOptions = database.ConnOptionsFromEnv(getenv)
	var err error
	if e.Kafka, err = kafka.SecurityFromEnv(getenv); err != nil {
		return Env{}, err
	}
	c := &e.Config
	c.Brokers = splitList(BrokersDefault)
	if v := getenv("HERALD_KAFKA_BROKERS"); v != "" {
		c.Brokers = splitList(v)
	}
	if v := getenv("HERALD_INVENTORY_TOPICS"); v != "" {
		c.Topics = splitList(v)
		for _, topic := range c.Topics {
			if err := kafka.ValidateTopicName(topic); err != nil {
				return Env{}, fmt.Errorf("HERALD_INVENTORY_TOPICS=%q: %v", v, err)
			}
		}
	}
	c.ConsumerName = getenv("HERALD_INVENTORY_CONSUMER")
	c.Group = getenv("HERALD_INVENTORY_GROUP")
	c.WarehouseURL = getenv("HERALD_WAREHOUSE_URL")
	c.Addr = getenv("HERALD_INVENTORY_ADDR")

	parse := func(name string, fn func(string) error) {
		if v := getenv(name); v != "" && err == nil {
			if perr := fn(v); perr != nil {
				err = fmt.Errorf("%s=%q: %v", name, v, perr)
			}
		}
	}
	parse("HERALD_INVENTORY_BATCH_SIZE", func(v string) (err error) { c.BatchSize, err = strconv.Atoi(v); return })
	parse("HERALD_INVENTORY_DEFAULT_STOCK", func(v string) (err error) { c.DefaultStock, err = strconv.ParseInt(v, 10, 64); return })
	parse("HERALD_INVENTORY_AUTO_PROVISION", func(v string) error {
		on, err := strconv.ParseBool(v)
		c.DisableAutoProvision = !on
		return err
	})
	parse("HERALD_INVENTORY_SWEEP_INTERVAL", func(v string) (err error) { c.SweepInterval, err = time.ParseDuration(v); return })
	parse("HERALD_INVENTORY_SWEEP_GRACE", func(v string) (err error) { c.SweepGrace, err = time.ParseDuration(v); return })
	parse("HERALD_INVENTORY_SESSION_TIMEOUT", func(v string) (err error) { c.SessionTimeout, err = time.ParseDuration(v); return })
	parse("HERALD_INVENTORY_START_AT", func(v string) (err error) { c.StartAt, err = time.Parse(time.RFC3339Nano, v); return })
	parse("HERALD_INVENTORY_RATE_LIMIT", func(v string) (err error) { c.RateLimit, err = strconv.ParseFloat(v, 64); return })
	parse("HERALD_INVENTORY_SEED", func(v string) error {
		e.Seed = map[string]int64{}
		for _, item := range strings.Split(v, ",") {
			sku, n, ok := strings.Cut(strings.TrimSpace(item), "=")
			q, perr := strconv.ParseInt(n, 10, 64)
			if !ok || sku == "" || perr != nil || q < 0 {
				return fmt.Errorf("want SKU=QUANTITY[,SKU=QUANTITY...], got %q", item)
			}
			e.Seed[sku] = q
		}
		return nil
	})
	if err != nil {
		return Env{}, err
	}
	return e, nil
}

// splitList splits a comma-separated list, dropping empty entries and
// surrounding spaces.
func splitList(list string) []string {
	var items []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
