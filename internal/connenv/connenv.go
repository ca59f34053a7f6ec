// Package connenv spells the HERALD_* variables of the secured connections
// (Kafka's TLS and SASL; the database's password, MySQL's or PostgreSQL's,
// and MySQL's TLS) once, for every herald binary: the CLI binds them to its
// flags (internal/cli), the example services read them with Kafka and
// MySQL, and the drills hand them to the processes they start with KafkaEnv
// and MySQLEnv. The database's variables keep their MySQL names, as
// HERALD_MYSQL_DSN stays the alias of HERALD_DATABASE_URL; a PostgreSQL URL
// carries its own TLS settings.
package connenv

import (
	"fmt"
	"strconv"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
)

// Kafka's variables (kafka.Security).
const (
	KafkaTLS              = "HERALD_KAFKA_TLS"
	KafkaTLSCAFile        = "HERALD_KAFKA_TLS_CA_FILE"
	KafkaTLSCertFile      = "HERALD_KAFKA_TLS_CERT_FILE"
	KafkaTLSKeyFile       = "HERALD_KAFKA_TLS_KEY_FILE"
	KafkaTLSServerName    = "HERALD_KAFKA_TLS_SERVER_NAME"
	KafkaSASLMechanism    = "HERALD_KAFKA_SASL_MECHANISM"
	KafkaSASLUsername     = "HERALD_KAFKA_SASL_USERNAME"
	KafkaSASLPasswordFile = "HERALD_KAFKA_SASL_PASSWORD_FILE"
	// KafkaSASLPassword has no flag: a password on a command line is in
	// every process list.
	KafkaSASLPassword = "HERALD_KAFKA_SASL_PASSWORD"
)

// The database's variables (mysql.ConnOptions; on PostgreSQL only the
// password ones apply, internal/database).
const (
	MySQLTLS           = "HERALD_MYSQL_TLS"
	MySQLTLSCAFile     = "HERALD_MYSQL_TLS_CA_FILE"
	MySQLTLSCertFile   = "HERALD_MYSQL_TLS_CERT_FILE"
	MySQLTLSKeyFile    = "HERALD_MYSQL_TLS_KEY_FILE"
	MySQLTLSServerName = "HERALD_MYSQL_TLS_SERVER_NAME"
	MySQLPasswordFile  = "HERALD_MYSQL_PASSWORD_FILE"
	// MySQLPassword has no flag, like KafkaSASLPassword.
	MySQLPassword = "HERALD_MYSQL_PASSWORD"
)

// Kafka reads Kafka's security settings with getenv (os.Getenv in a
// binary); an invalid value is an error naming its variable. The result is
// not validated: kafka.Security.Options does that, naming the fields.
func Kafka(getenv func(string) string) (kafka.Security, error) {
	s := kafka.Security{
		CAFile: getenv(KafkaTLSCAFile), CertFile: getenv(KafkaTLSCertFile), KeyFile: getenv(KafkaTLSKeyFile),
		ServerName: getenv(KafkaTLSServerName), SASLMechanism: getenv(KafkaSASLMechanism),
		SASLUsername: getenv(KafkaSASLUsername), SASLPassword: getenv(KafkaSASLPassword),
		SASLPasswordFile: getenv(KafkaSASLPasswordFile),
	}
	if v := getenv(KafkaTLS); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return kafka.Security{}, fmt.Errorf("%s=%q: want true or false", KafkaTLS, v)
		}
		s.TLS = on
	}
	return s, nil
}

// MySQL reads the database's connection options with getenv.
func MySQL(getenv func(string) string) mysql.ConnOptions {
	return mysql.ConnOptions{
		TLSMode: getenv(MySQLTLS), TLSCAFile: getenv(MySQLTLSCAFile), TLSCertFile: getenv(MySQLTLSCertFile),
		TLSKeyFile: getenv(MySQLTLSKeyFile), TLSServerName: getenv(MySQLTLSServerName),
		Password: getenv(MySQLPassword), PasswordFile: getenv(MySQLPasswordFile),
	}
}

// KafkaEnv returns the NAME=VALUE entries that give s to a child process
// (which reads them with Kafka, or as herald's flags).
func KafkaEnv(s kafka.Security) []string {
	var env []string
	add := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	if s.TLS {
		add(KafkaTLS, "true")
	}
	add(KafkaTLSCAFile, s.CAFile)
	add(KafkaTLSCertFile, s.CertFile)
	add(KafkaTLSKeyFile, s.KeyFile)
	add(KafkaTLSServerName, s.ServerName)
	add(KafkaSASLMechanism, s.SASLMechanism)
	add(KafkaSASLUsername, s.SASLUsername)
	add(KafkaSASLPassword, s.SASLPassword)
	add(KafkaSASLPasswordFile, s.SASLPasswordFile)
	return env
}

// MySQLEnv returns the NAME=VALUE entries that give o to a child process.
func MySQLEnv(o mysql.ConnOptions) []string {
	var env []string
	add := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	add(MySQLTLS, o.TLSMode)
	add(MySQLTLSCAFile, o.TLSCAFile)
	add(MySQLTLSCertFile, o.TLSCertFile)
	add(MySQLTLSKeyFile, o.TLSKeyFile)
	add(MySQLTLSServerName, o.TLSServerName)
	add(MySQLPassword, o.Password)
	add(MySQLPasswordFile, o.PasswordFile)
	return env
}
