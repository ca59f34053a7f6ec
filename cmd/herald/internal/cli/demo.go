package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
)

// demoFlagOfField names the flag behind each drill.DemoConfig field.
var demoFlagOfField = map[string]string{
	"BinDir": "--bin-dir", "DBPrefix": "--db-prefix", "Rate": "--rate", "Duration": "--duration",
	"DatabaseURL": "--database-url", "Brokers": "--kafka-brokers", "RunDir": "--run-dir",
}

// demoOptions are herald demo's flags. validate checks them and fills in
// the directories left out; run runs the demo.
type demoOptions struct {
	cmd *cobra.Command // where the command writes

	db    dbFlags
	kafka kafkaFlags
	cfg   drill.DemoConfig
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole pipeline with a steady load for a minute and show it working",
		Long: `Starts the orders API, two relays, the inventory consumer and the warehouse
as real processes on fresh databases (herald_demo_orders, _inventory,
_warehouse) and a fresh topic, sends a steady load of orders (creates,
cancels, deliberate rollbacks) for --duration while one status line shows
orders written, events published and consumed, duplicates absorbed, backlog
and lag. Then it drains, checks that nothing was lost or applied twice,
stops every process and prints where the metrics and logs are. The
databases stay for a look with herald status; the next demo recreates them.

Needs the servers (make up) and the binaries (make build); make demo does all
three.`,
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

// register adds the demo's flags to cmd, bound to o.
func (o *demoOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	f := cmd.Flags()
	f.DurationVar(&o.cfg.Duration, "duration", drill.DemoDurationDefault, "how long to send orders")
	f.Float64Var(&o.cfg.Rate, "rate", drill.DemoRateDefault, "orders per second")
	f.StringVar(&o.cfg.BinDir, "bin-dir", "", "directory of the herald, orders, inventory and warehouse binaries (default: herald's own directory)")
	f.StringVar(&o.cfg.RunDir, "run-dir", "", "directory for the processes' logs (default a new herald-demo-* directory under $TMPDIR)")
	f.StringVar(&o.cfg.DBPrefix, "db-prefix", drill.DemoDBPrefixDefault, "prefix of the demo's database and topic names")
	env.bind(cmd)
}

// validate checks the connection flags and --duration, and fills in the
// binaries' and the logs' directories when they were left out;
// drill.RunDemo checks the rest (run names their flags).
func (o *demoOptions) validate() error {
	if _, err := o.kafka.options(); err != nil {
		return err
	}
	var err error
	if o.cfg.DatabaseURL, err = o.db.check(); err != nil {
		return err
	}
	if o.cfg.Duration <= 0 {
		return usageError{fmt.Errorf("--duration: must be positive, got %v", o.cfg.Duration)}
	}
	if o.cfg.BinDir == "" {
		if o.cfg.BinDir, err = executableDir(); err != nil {
			return err
		}
	}
	if o.cfg.RunDir == "" {
		o.cfg.RunDir = filepath.Join(os.TempDir(), "herald-demo-"+time.Now().Format("20060102-150405"))
	}
	return nil
}

// run runs the demo, with a live status line when the output is a
// terminal.
func (o *demoOptions) run(ctx context.Context) error {
	cfg := o.cfg
	cfg.Brokers, cfg.Out = o.kafka.brokers, o.cmd.OutOrStdout()
	cfg.Kafka, cfg.DatabaseOptions = o.kafka.security(), o.db.options()
	if f, ok := cfg.Out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			cfg.Live = true
		}
	}
	return drillConfigError(drill.RunDemo(ctx, cfg), demoFlagOfField)
}
