package localstack

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

const (
	// MySQLDSNDefault is the DSN of `make up`'s MariaDB.
	MySQLDSNDefault = "herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC"
	// PostgresURLDefault is the URL of `make up`'s PostgreSQL (no TLS on
	// the loopback: sslmode=disable saves pgx's TLS attempt per connection).
	PostgresURLDefault = "postgres://herald:herald@127.0.0.1:5432/herald?sslmode=disable"
	// KafkaBrokersDefault is the bootstrap address of `make up`'s Kafka.
	KafkaBrokersDefault = "127.0.0.1:9092"
	// MariaDBSocket is `make up`'s MariaDB socket, where root logs in
	// without a password.
	MariaDBSocket = "/var/tmp/herald-stack/mariadb/mariadb.sock"
	// MariaDBPidFile holds the pid of `make up`'s mariadbd.
	MariaDBPidFile = "/var/tmp/herald-stack/mariadb/mariadb.pid"
	// PostgresPidFile holds, on its first line, the pid of `make up`'s
	// PostgreSQL postmaster.
	PostgresPidFile = "/var/tmp/herald-stack/postgres/data/postmaster.pid"
	// KafkaPidFiles matches the pid files of `make up`'s Kafka nodes
	// (brokers and controller).
	KafkaPidFiles = "/var/tmp/herald-stack/kafka/node-*/kafka.pid"
)

// MariaDBRoot runs statements as MariaDB's root over MariaDBSocket, for
// what herald's user may not do (create users, rotate or purge binlogs).
func MariaDBRoot(statements ...string) error {
	out, err := exec.Command("mariadb", "--socket="+MariaDBSocket, "-uroot", "-e", strings.Join(statements, ";\n")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("MariaDB root over %s: %v: %s", MariaDBSocket, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// MySQLDSN returns HERALD_MYSQL_DSN, or MySQLDSNDefault when it is unset.
func MySQLDSN() string {
	if v := os.Getenv("HERALD_MYSQL_DSN"); v != "" {
		return v
	}
	return MySQLDSNDefault
}

// DatabaseURL returns the database herald's programs use when no flag
// names one, and the variable it came from: HERALD_DATABASE_URL, else its
// alias HERALD_MYSQL_DSN, else MySQLDSNDefault (variable ""). A
// postgres:// URL names PostgreSQL, anything else a MySQL DSN.
func DatabaseURL() (dsn, variable string) {
	for _, v := range []string{"HERALD_DATABASE_URL", "HERALD_MYSQL_DSN"} {
		if dsn := os.Getenv(v); dsn != "" {
			return dsn, v
		}
	}
	return MySQLDSNDefault, ""
}

// PostgresURL returns HERALD_POSTGRES_URL, or PostgresURLDefault when it is
// unset.
func PostgresURL() string {
	if v := os.Getenv("HERALD_POSTGRES_URL"); v != "" {
		return v
	}
	return PostgresURLDefault
}

// KafkaBrokers returns the comma-separated HERALD_KAFKA_BROKERS, or
// KafkaBrokersDefault when it is unset.
func KafkaBrokers() []string {
	v := os.Getenv("HERALD_KAFKA_BROKERS")
	if v == "" {
		v = KafkaBrokersDefault
	}
	return SplitBrokers(v)
}

// SplitBrokers splits a comma-separated broker list, dropping empty entries
// and surrounding spaces.
func SplitBrokers(list string) []string {
	var brokers []string
	for _, b := range strings.Split(list, ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	return brokers
}
