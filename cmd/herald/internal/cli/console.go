package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// Console defaults.
const (
	ConsoleAddrDefault = "127.0.0.1:8088"
	// consoleUsersEnv holds the users themselves, one a line, when there
	// is no file (never a flag: a flag's value shows in the process list).
	consoleUsersEnv = "HERALD_CONSOLE_USERS"
)

// consoleOptions are herald console's flags. validate reads the users and
// the certificate and checks the rest before anything connects, each error
// naming its flag; run serves the console until the context ends.
type consoleOptions struct {
	routing           routeFlags
	mapping           mappingFlags
	records           recordFlags
	db                dbFlags
	kafka             kafkaFlags
	addr, prefix      string
	usersFile         string
	certFile, keyFile string
	suffix            string
	refresh           time.Duration

	// What validate read, for run.
	users        []console.User
	tls          *tls.Config // nil: plain HTTP
	routes       map[string]string
	defaultTopic string
	formats      record.FormatConfig
	kafkaOpts    []kgo.Opt
}

func newConsoleCommand() *cobra.Command {
	o := &consoleOptions{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console: status, events, quarantine actions, replays, audit",
		Long: `Serves the web console on --addr (default 127.0.0.1:8088): the overview
(the same report as herald status), event search and aggregate timelines,
the quarantine with retry and discard (one or many, with a reason, audited
as the CLI's), replays started and cancelled as herald replay runs them, and
the audit log. /healthz and /readyz answer without signing in.

Users sign in with basic auth, a bearer token or the login page. They are
read from --users-file (or HERALD_CONSOLE_USERS), one a line:

  # role      name   secret (at least 12 characters)
  operator    alice  correct-horse-battery-staple
  read-only   bob    another-long-secret

Without users everyone acts as an operator, so an address other than a
loopback one is refused unless users are configured. --tls-cert-file and
--tls-key-file serve HTTPS; behind a proxy that terminates TLS, keep the
console on a loopback address. See docs/console.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the console's flags to cmd, bound to o.
func (o *consoleOptions) register(cmd *cobra.Command) {
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	o.routing.register(cmd, env)
	o.mapping.register(cmd, env)
	o.records.register(cmd, env)
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", ConsoleAddrDefault, "address to serve on; any but a loopback one needs users")
	f.StringVar(&o.prefix, "prefix", "", "path to serve under, as /herald (behind a proxy that forwards it)")
	f.StringVar(&o.usersFile, "users-file", "", "file of the users who may sign in, one \"role name secret\" a line (or set "+consoleUsersEnv+")")
	f.StringVar(&o.certFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM, then any intermediates)")
	f.StringVar(&o.keyFile, "tls-key-file", "", "the certificate's private key (PEM)")
	f.StringVar(&o.suffix, "suffix", ".replay", "replay topic = live topic + suffix, as for herald replay")
	f.DurationVar(&o.refresh, "refresh", console.RefreshIntervalDefault, "how often the live parts of a page refresh")
	// The console's own flags take the rule's variables (flags.go):
	// HERALD_CONSOLE_ADDR, HERALD_CONSOLE_USERS_FILE, ...
	env.bind(cmd)
}

// validate reads the users and the certificate, checks the address, the
// routes, the record formats and the Kafka settings, and keeps what it
// read for run.
func (o *consoleOptions) validate() error {
	var err error
	if o.users, err = consoleUsers(o.usersFile); err != nil {
		return err
	}
	if err := checkConsoleAddr(o.addr, len(o.users) > 0); err != nil {
		return err
	}
	if (o.certFile == "") != (o.keyFile == "") {
		return usageError{errors.New("--tls-cert-file and --tls-key-file: give both, or neither")}
	}
	if o.certFile != "" {
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return usageError{fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)}
		}
		o.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if o.routes, o.defaultTopic, err = o.routing.parse(); err != nil {
		return err
	}
	if o.formats, err = o.records.formatConfig(&o.mapping); err != nil {
		return err
	}
	o.kafkaOpts, err = o.kafka.options()
	return err
}

// run connects to the database and Kafka, mounts the console's handler
// under --prefix and serves it on --addr until ctx ends, then shuts the
// server down gracefully.
func (o *consoleOptions) run(ctx context.Context) error {
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Kafka is reported on, not required: the console starts while the
	// cluster is down and says so on the overview.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.kafka.brokers...), kgo.ClientID("herald-console")}, o.kafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: o.kafka.brokers, ClientID: "herald-console-replay",
		ClientOptions: o.kafkaOpts, RecordTimestamps: o.formats.Timestamped()})
	if err != nil {
		return err
	}
	defer producer.Close()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	adm := kadm.NewClient(cl)
	h, err := console.NewHandler(console.Config{
		Store: store.New(conn, o.db.dialect()), Prefix: o.prefix, Users: o.users, Logger: logger,
		RefreshInterval: o.refresh, SecureCookies: o.tls != nil,
		Kafka: &console.KafkaConfig{Admin: adm, Topics: liveTopics(o.routes, o.defaultTopic)},
		Replay: &console.ReplayConfig{Producer: producer, Admin: adm, Topics: o.routes,
			DefaultTopic: o.defaultTopic, Records: o.formats, Suffix: o.suffix},
	})
	if err != nil {
		return usageError{err}
	}
	defer h.Close()
	mux := http.NewServeMux()
	root := o.prefix
	if root == "" || !strings.HasSuffix(root, "/") {
		root += "/"
	}
	mux.Handle(root, h)
	srv := &http.Server{Addr: o.addr, Handler: mux, TLSConfig: o.tls, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	scheme := "http"
	if o.tls != nil {
		scheme = "https"
	}
	dsn, _ := o.db.url()
	logger.Info("console listening", "url", scheme+"://"+ln.Addr().String()+o.prefix+"/",
		"database", database.Address(dsn), "users", len(o.users), "tls", o.tls != nil)
	errc := make(chan error, 1)
	go func() {
		if o.tls != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// consoleUsers reads the users from the file, or else from
// HERALD_CONSOLE_USERS; an error names where, never a secret.
func consoleUsers(file string) ([]console.User, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, usageError{fmt.Errorf("--users-file: %w", err)}
		}
		defer f.Close()
		users, err := console.ParseUsers(f)
		if err != nil {
			return nil, usageError{fmt.Errorf("--users-file %s: %w", file, err)}
		}
		if len(users) == 0 {
			return nil, usageError{fmt.Errorf("--users-file %s: no user in it", file)}
		}
		return users, nil
	}
	v, ok := os.LookupEnv(consoleUsersEnv)
	if !ok {
		return nil, nil
	}
	users, err := console.ParseUsers(strings.NewReader(v))
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", consoleUsersEnv, err)}
	}
	if len(users) == 0 {
		return nil, usageError{fmt.Errorf("%s: no user in it", consoleUsersEnv)}
	}
	return users, nil
}

// checkConsoleAddr refuses to serve beyond this machine without users:
// without them everyone who reaches the console acts as an operator.
func checkConsoleAddr(addr string, withUsers bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Errorf("--addr %q: %w", addr, err)}
	}
	if withUsers {
		return nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	return usageError{fmt.Errorf("--addr %s: serving on %s needs authentication, or anyone who reaches it acts as an operator: "+
		"give --users-file (or %s), or serve on a loopback address such as %s", addr, where, consoleUsersEnv, ConsoleAddrDefault)}
}
