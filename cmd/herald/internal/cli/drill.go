package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
	"github.com/herald-outbox/herald/internal/config"
)

// drillFlagOfField names the flag behind each drill.Config field.
var drillFlagOfField = map[string]string{
	"BinDir": "--bin-dir", "DatabaseURL": "--database-url", "Brokers": "--kafka-brokers", "RunDir": "--run-dir",
	"DBPrefix": "--db-prefix", "Events": "--events", "Rate": "--rate", "Concurrency": "--concurrency",
	"Lease": "--lease", "SessionTimeout": "--session-timeout", "Outage": "--outage",
	"RestartDelay": "--restart-delay", "Timeout": "--timeout", "Source": "--source",
}

// drillOptions are herald drill's flags. validate checks them and fills
// in the directories left out; run runs the drills and writes the report.
type drillOptions struct {
	cmd *cobra.Command // where the command writes

	db     dbFlags
	kafka  kafkaFlags
	cfg    drill.Config
	list   bool
	names  string
	report string

	drills []drill.Drill // what validate found --drill to name
}

func newDrillCommand() *cobra.Command {
	o := &drillOptions{}
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Run fault drills: the whole pipeline as real processes, one fault each, then verify nothing was lost or doubled",
		Long: `Each drill creates fresh databases (PREFIX<drill>_orders, _inventory,
_warehouse) and a fresh topic (12 partitions, replication factor min(3,
brokers)), runs the orders API, two relays, the inventory consumer and the
warehouse as supervised processes (a process that dies is restarted after
--restart-delay, without failpoints), sends --events orders (creates,
cancels, deliberate rollbacks) and injects exactly one fault. Once the
outbox backlog, the consumer lag and the pending warehouse calls are 0, it
verifies from the databases and the topic (read by kcat): every committed
event published and consumed, no rolled-back order anywhere, every order
reserved once with one warehouse effect (released once if cancelled),
per-aggregate order on the topic; and it counts duplicates and measures
recovery.

--source binlog (MariaDB/MySQL) and --source wal (PostgreSQL) run the
relays with that source: one leads the stream, the other stands by; the
stream-crash-* drills crash the leader in the stream's windows, where the
relay-crash-* drills crash a polling relay; stream-slot-dropped (wal) drops
the replication slot under the leader.

Writes a JSON report (--report) and a Markdown summary next to it; exits 1
if any drill failed or could not complete. Logs of every process are kept
under --run-dir.

The broker and database drills stop and start servers: by default with
--stack-dir's node.sh when the servers are local; against other servers pass
--restart-kafka-cmd / --restart-mysql-cmd (a shell command that receives
stop or start as $1), or those drills are skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.list {
				return o.printCatalog()
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the drill's flags to cmd, bound to o.
func (o *drillOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	cfg := &o.cfg
	f := cmd.Flags()
	f.BoolVar(&o.list, "list", false, "list the drills and exit")
	f.StringVar(&o.names, "drill", "all", "drills to run: all, or names separated by commas (see --list); -NAME leaves one out (all,-kafka-broker-restart)")
	f.StringVar(&cfg.Source, "source", drill.SourcePoll, "the relays' --source: poll, binlog (MariaDB/MySQL) or wal (PostgreSQL); --drill all runs the drills of that source")
	f.IntVar(&cfg.Events, "events", drill.EventsDefault, "orders per drill")
	f.Float64Var(&cfg.Rate, "rate", drill.RateDefault, "orders per second")
	f.IntVar(&cfg.Concurrency, "concurrency", drill.ConcurrencyDefault, "concurrent HTTP clients")
	f.StringVar(&o.report, "report", "", "JSON report file; the Markdown summary goes next to it (default RUN_DIR/report.json)")
	f.StringVar(&cfg.BinDir, "bin-dir", "", "directory of the herald, orders, inventory and warehouse binaries (default: herald's own directory)")
	f.StringVar(&cfg.RunDir, "run-dir", "", "directory for the processes' logs (default a new herald-drill-* directory under $TMPDIR)")
	f.StringVar(&cfg.DBPrefix, "db-prefix", drill.DBPrefixDefault, "prefix of the drills' database and topic names")
	f.DurationVar(&cfg.Lease, "lease", drill.LeaseDefault, "the relays' --lease")
	f.DurationVar(&cfg.SessionTimeout, "session-timeout", drill.SessionTimeoutDefault, "the consumer group session timeout")
	f.DurationVar(&cfg.Outage, "outage", drill.OutageDefault, "how long a broker or the database stays down")
	f.DurationVar(&cfg.RestartDelay, "restart-delay", drill.RestartDelayDefault, "pause before the supervisor restarts a dead process")
	f.DurationVar(&cfg.Timeout, "timeout", drill.TimeoutDefault, "longest wait per drill for the pipeline to drain")
	f.StringVar(&cfg.RestartKafka, "restart-kafka-cmd", "", "shell command that stops ($1=stop) or starts ($1=start) a Kafka broker (default: STACK_DIR/node.sh for local brokers)")
	f.StringVar(&cfg.RestartMySQL, "restart-mysql-cmd", "", "shell command that stops ($1=stop) or starts ($1=start) the database server (default: STACK_DIR/node.sh for a local server)")
	f.StringVar(&cfg.StackDir, "stack-dir", "", "directory of the local stack's node.sh (default BIN_DIR/../stack)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the databases and topics of drills that passed (failed drills' are always kept)")
	env.bind(cmd)
}

// printCatalog is --list: every drill, its crash window, its source and
// what it proves.
func (o *drillOptions) printCatalog() error {
	w := tabwriter.NewWriter(o.cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DRILL\tWINDOW\tSOURCE\tFAULT")
	for _, d := range drill.Catalog {
		window, source := "-", "any"
		if d.Window > 0 {
			window = fmt.Sprint(d.Window)
		}
		if d.Source != "" {
			source = d.Source
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", d.Name, window, source, d.Fault)
		fmt.Fprintf(w, "\t\t\tproves: %s\n", d.Proves)
	}
	return w.Flush()
}

// validate checks --drill and the connection flags, and fills in the
// binaries' directory, the run directory and the report's path when they
// were left out. drill.Run checks the rest (run names their flags).
func (o *drillOptions) validate() error {
	var err error
	if o.drills, err = drill.Lookup(o.names, o.cfg.Source); err != nil {
		return usageError{fmt.Errorf("--drill: %w", err)}
	}
	if _, err := o.kafka.options(); err != nil {
		return err
	}
	if o.cfg.DatabaseURL, err = o.db.check(); err != nil {
		return err
	}
	if o.cfg.BinDir == "" {
		if o.cfg.BinDir, err = executableDir(); err != nil {
			return err
		}
	}
	if o.cfg.RunDir == "" {
		// A directory of its own even for two drills started in the same
		// second (CI runs MariaDB's beside PostgreSQL's): their processes'
		// logs are the drills' evidence.
		if o.cfg.RunDir, err = os.MkdirTemp("", "herald-drill-"+time.Now().Format("20060102-150405")+"-"); err != nil {
			return err
		}
	}
	if o.report == "" {
		o.report = filepath.Join(o.cfg.RunDir, "report.json")
	}
	return nil
}

// run runs the drills, writes the report and its summary, and fails when
// a drill did not pass.
func (o *drillOptions) run(ctx context.Context) error {
	out := o.cmd.OutOrStdout()
	cfg := o.cfg
	cfg.Brokers, cfg.Out = o.kafka.brokers, out
	cfg.Kafka, cfg.DatabaseOptions = o.kafka.security(), o.db.options()
	cfg.Command = commandLine(os.Args)
	rep, err := drill.Run(ctx, cfg, o.drills)
	if err != nil {
		return drillConfigError(err, drillFlagOfField)
	}
	mdPath, err := rep.Write(o.report)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	fmt.Fprintf(out, "\n%s\nreport: %s\nsummary: %s\nlogs: %s\n", rep.Markdown(), o.report, mdPath, rep.RunDir)
	if rep.Verdict != drill.VerdictPass {
		return errors.New("drills failed; see the report")
	}
	return nil
}

// commandLine is args as a shell would take them, for the report.
func commandLine(args []string) string {
	out := []string{"herald"}
	for _, a := range args[1:] {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\;&|<>*?()`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// executableDir is the directory of the running herald binary.
func executableDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("--bin-dir: cannot find herald's own directory: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Dir(exe), nil
}

// drillConfigError rewrites drill.Config field names as flag names.
func drillConfigError(err error, flags map[string]string) error {
	if err == nil {
		return nil
	}
	var msgs []string
	usage := false
	for _, e := range config.Leaves(err) {
		var ce *drill.ConfigError
		if errors.As(e, &ce) {
			usage = true
			if flag, ok := flags[ce.Field]; ok {
				msgs = append(msgs, flag+": "+ce.Msg)
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	if !usage {
		return err
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}
