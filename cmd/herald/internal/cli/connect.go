package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// dbFlags is the database flag, --database-url (alias --mysql-dsn; see
// database.go), and the connection options kept out of it (TLS to MySQL, a
// password kept out of the address) shared by every command that talks to
// the database.
type dbFlags struct {
	dsn, mysqlDSN        string
	urlGiven, mysqlGiven bool
	opts                 database.ConnOptions
}

// mysqlFlagOfField names the flag (or variable) behind each
// database.ConnOptions field.
var mysqlFlagOfField = map[string]string{
	"TLSMode": "--mysql-tls", "TLSCAFile": "--mysql-tls-ca-file", "TLSCertFile": "--mysql-tls-cert-file",
	"TLSKeyFile": "--mysql-tls-key-file", "TLSServerName": "--mysql-tls-server-name",
	"Password": database.EnvPassword, "PasswordFile": "--mysql-password-file",
}

func (f *dbFlags) register(cmd *cobra.Command, env envFlags) {
	f.registerDatabase(cmd, env)
	fl := cmd.Flags()
	fl.StringVar(&f.opts.TLSMode, "mysql-tls", "",
		"TLS to MySQL/MariaDB: verify-identity, verify-ca or skip-verify (default none; verify-identity with --mysql-tls-ca-file; a PostgreSQL URL sets sslmode itself)")
	fl.StringVar(&f.opts.TLSCAFile, "mysql-tls-ca-file", "", "PEM file of the CA that signs MySQL's certificate (default: the system roots)")
	fl.StringVar(&f.opts.TLSCertFile, "mysql-tls-cert-file", "", "client certificate (PEM), for MySQL accounts created REQUIRE X509")
	fl.StringVar(&f.opts.TLSKeyFile, "mysql-tls-key-file", "", "the client certificate's key (PEM, unencrypted)")
	fl.StringVar(&f.opts.TLSServerName, "mysql-tls-server-name", "", "name MySQL's certificate must carry (default: the DSN's host)")
	fl.StringVar(&f.opts.PasswordFile, "mysql-password-file", "",
		"file holding the database password (MySQL or PostgreSQL), replacing the address's (or set "+database.EnvPassword+")")
	for flag, name := range map[string]string{
		"mysql-tls": database.EnvTLS, "mysql-tls-ca-file": database.EnvTLSCAFile,
		"mysql-tls-cert-file": database.EnvTLSCertFile, "mysql-tls-key-file": database.EnvTLSKeyFile,
		"mysql-tls-server-name": database.EnvTLSServerName, "mysql-password-file": database.EnvPasswordFile,
	} {
		env[flag] = name
	}
}

// options returns the connection options, with the password from
// HERALD_MYSQL_PASSWORD (never a flag: it would show in the process list).
func (f *dbFlags) options() database.ConnOptions {
	o := f.opts
	o.Password = os.Getenv(database.EnvPassword)
	return o
}

// check reads the address and the options' files without connecting, for
// commands that hand them on (drills), and returns the address; errors
// name the flag.
func (f *dbFlags) check() (string, error) {
	dsn, err := f.url()
	if err != nil {
		return "", err
	}
	if err := database.Check(dsn, f.options()); err != nil {
		return "", flagError(err, mysqlFlagOfField)
	}
	return dsn, nil
}

// open connects, naming the flag when the address or an option is wrong.
func (f *dbFlags) open(ctx context.Context) (*sql.DB, error) {
	dsn, err := f.check()
	if err != nil {
		return nil, err
	}
	db, _, err := database.Open(ctx, dsn, f.options())
	if err != nil {
		return nil, flagError(err, mysqlFlagOfField)
	}
	return db, nil
}

// openMigrated is open for the commands that read and write herald's
// tables: a database without herald's current schema is refused with what
// to run, not with the driver's "table doesn't exist".
func (f *dbFlags) openMigrated(ctx context.Context) (*sql.DB, error) {
	db, err := f.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := migrations.Herald.Check(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// kafkaFlags is --kafka-brokers and the security flags (TLS, mutual TLS,
// SASL) shared by every command that talks to Kafka.
type kafkaFlags struct {
	brokers []string
	sec     kafka.Security
}

// kafkaFlagOfField names the flag (or variable) behind each kafka.Security
// field.
var kafkaFlagOfField = map[string]string{
	"TLS": "--kafka-tls", "CAFile": "--kafka-tls-ca-file", "CertFile": "--kafka-tls-cert-file",
	"KeyFile": "--kafka-tls-key-file", "ServerName": "--kafka-tls-server-name",
	"SASLMechanism": "--kafka-sasl-mechanism", "SASLUsername": "--kafka-sasl-username",
	"SASLPassword": kafka.EnvSASLPassword, "SASLPasswordFile": "--kafka-sasl-password-file",
}

func (f *kafkaFlags) register(cmd *cobra.Command, env envFlags) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.brokers, "kafka-brokers", []string{localstack.KafkaBrokersDefault},
		"Kafka seed brokers, comma-separated")
	fl.BoolVar(&f.sec.TLS, "kafka-tls", false, "TLS to Kafka, checking the brokers against the system's root CAs (implied by the other --kafka-tls-* flags)")
	fl.StringVar(&f.sec.CAFile, "kafka-tls-ca-file", "", "PEM file of the CA that signs the brokers' certificates (default: the system roots)")
	fl.StringVar(&f.sec.CertFile, "kafka-tls-cert-file", "", "client certificate (PEM), for brokers that require mutual TLS")
	fl.StringVar(&f.sec.KeyFile, "kafka-tls-key-file", "", "the client certificate's key (PEM, unencrypted)")
	fl.StringVar(&f.sec.ServerName, "kafka-tls-server-name", "", "name the brokers' certificates must carry (default: the host dialled)")
	fl.StringVar(&f.sec.SASLMechanism, "kafka-sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default none)")
	fl.StringVar(&f.sec.SASLUsername, "kafka-sasl-username", "", "SASL user")
	fl.StringVar(&f.sec.SASLPasswordFile, "kafka-sasl-password-file", "",
		"file holding the SASL password, read at every connection (or set "+kafka.EnvSASLPassword+")")
	for flag, name := range map[string]string{
		"kafka-brokers": "HERALD_KAFKA_BROKERS", "kafka-tls": kafka.EnvTLS, "kafka-tls-ca-file": kafka.EnvTLSCAFile,
		"kafka-tls-cert-file": kafka.EnvTLSCertFile, "kafka-tls-key-file": kafka.EnvTLSKeyFile,
		"kafka-tls-server-name": kafka.EnvTLSServerName, "kafka-sasl-mechanism": kafka.EnvSASLMechanism,
		"kafka-sasl-username": kafka.EnvSASLUsername, "kafka-sasl-password-file": kafka.EnvSASLPasswordFile,
	} {
		env[flag] = name
	}
}

// security returns the settings, with the password from
// HERALD_KAFKA_SASL_PASSWORD (never a flag).
func (f *kafkaFlags) security() kafka.Security {
	s := f.sec
	s.SASLPassword = os.Getenv(kafka.EnvSASLPassword)
	return s
}

// validate checks the flags without reading any file.
func (f *kafkaFlags) validate() error {
	if len(f.brokers) == 0 {
		return usageError{fmt.Errorf("--kafka-brokers: at least one broker is required")}
	}
	if err := f.security().Validate(); err != nil {
		return flagError(err, kafkaFlagOfField)
	}
	return nil
}

// options returns the franz-go options of the security flags, having read
// their files; a missing or malformed file is an error naming the flag.
func (f *kafkaFlags) options() ([]kgo.Opt, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	opts, err := f.security().Options()
	if err != nil {
		return nil, flagError(err, kafkaFlagOfField)
	}
	return opts, nil
}

// admin returns an admin client after checking the cluster answers.
func (f *kafkaFlags) admin(ctx context.Context) (*kadm.Client, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(f.brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := adm.BrokerMetadata(pingCtx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka at %v (%s) does not answer: %w", f.brokers, f.sec, err)
	}
	return adm, nil
}

// flagError renders the field errors (*config.Error) of kafka.Security or
// mysql.ConnOptions with the names of their flags (flagOfField) as a usage
// error; an error without one (a failed connection) is returned as it is.
func flagError(err error, flagOfField map[string]string) error {
	for _, e := range config.Leaves(err) {
		var ce *config.Error
		if errors.As(e, &ce) {
			return usageError{errors.New(strings.Join(flagMessages(err, flagOfField), "; "))}
		}
	}
	return err
}
