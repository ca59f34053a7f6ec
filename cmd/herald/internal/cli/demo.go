package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
)

func newDemoCommand() *cobra.Command {
	var (
		db  dbFlags
		kf  kafkaFlags
		cfg drill.DemoConfig
	)
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
			if _, err := kf.options(); err != nil {
				return err
			}
			dsn, err := db.check()
			if err != nil {
				return err
			}
			if cfg.Duration <= 0 {
				return usageError{fmt.Errorf("--duration: must be positive, got %v", cfg.Duration)}
			}
			if cfg.BinDir == "" {
				if cfg.BinDir, err = executableDir(); err != nil {
					return err
				}
			}
			if cfg.RunDir == "" {
				cfg.RunDir = filepath.Join(os.TempDir(), "herald-demo-"+time.Now().Format("20060102-150405"))
			}
			cfg.DatabaseURL, cfg.Brokers, cfg.Out = dsn, kf.brokers, cmd.OutOrStdout()
			cfg.Kafka, cfg.DatabaseOptions = kf.security(), db.options()
			if f, ok := cmd.OutOrStdout().(*os.File); ok {
				if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
					cfg.Live = true
				}
			}
			return drillConfigError(drill.RunDemo(cmd.Context(), cfg), map[string]string{
				"BinDir": "--bin-dir", "DBPrefix": "--db-prefix", "Rate": "--rate", "Duration": "--duration",
				"DatabaseURL": "--database-url", "Brokers": "--kafka-brokers", "RunDir": "--run-dir",
			})
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	kf.register(cmd, env)
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", drill.DemoDurationDefault, "how long to send orders")
	f.Float64Var(&cfg.Rate, "rate", drill.DemoRateDefault, "orders per second")
	f.StringVar(&cfg.BinDir, "bin-dir", "", "directory of the herald, orders, inventory and warehouse binaries (default: herald's own directory)")
	f.StringVar(&cfg.RunDir, "run-dir", "", "directory for the processes' logs (default a new herald-demo-* directory under $TMPDIR)")
	f.StringVar(&cfg.DBPrefix, "db-prefix", drill.DemoDBPrefixDefault, "prefix of the demo's database and topic names")
	env.bind(cmd)
	return cmd
}
