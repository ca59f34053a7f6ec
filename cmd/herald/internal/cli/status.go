package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/store"
)

// statusReport is `herald status --json`: package status's Report, which
// the console shows too.
type statusReport = status.Report

// statusOptions are herald status's flags. validate checks them (Kafka's
// answer is reported, not required, but settings that can never work are
// the operator's to fix first); run prints the report.
type statusOptions struct {
	cmd *cobra.Command // where the command writes

	db      dbFlags
	kafka   kafkaFlags
	routing routeFlags
	topics  []string
	groups  []string
	asJSON  bool
}

func newStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One screen for the operator: backlog, ages, failures, quarantine, partitions, consumer lag",
		Long: `One screen for the operator: the outbox backlog by state with the oldest
ages (since the events occurred), failures by class in the last hour, the
events a Kafka configuration failure stops (by class, charged nothing), the
relays and their leases, the oldest quarantined events, and,
from Kafka, the records per partition and the consumer groups' lag on the
topics a relay with the same routing settings publishes to (--topic and
--default-topic, or HERALD_TOPICS and HERALD_DEFAULT_TOPIC, as for herald
relay), or on --topics.

When Kafka does not answer, the database's part is still printed and the
command exits 1.`,
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

// register adds the status's flags to cmd, bound to o.
func (o *statusOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	o.routing.register(cmd, env)
	cmd.Flags().StringSliceVar(&o.topics, "topics", nil, "topics to show partitions and lag for (default: the topics of --topic and --default-topic)")
	cmd.Flags().StringSliceVar(&o.groups, "groups", nil, "consumer groups to show (default: every group reading the topics)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	env["topics"] = "HERALD_STATUS_TOPICS"
	env.bind(cmd)
}

// validate checks the Kafka settings and the topics, which default to the
// routes' live topics.
func (o *statusOptions) validate() error {
	if _, err := o.kafka.options(); err != nil {
		return err
	}
	if len(o.topics) > 0 {
		return validateTopicNames(o.topics)
	}
	routes, defaultTopic, err := o.routing.parse()
	if err != nil {
		return err
	}
	o.topics = liveTopics(routes, defaultTopic)
	return nil
}

// run prints the report, as text or JSON; without Kafka's part it prints
// the database's and fails.
func (o *statusOptions) run(ctx context.Context) error {
	rep, kafkaErr, err := readStatus(ctx, &o.db, &o.kafka, o.topics, o.groups)
	if err != nil {
		if o.asJSON {
			// A script reading --json gets a JSON object whatever
			// happened; the exit code and stderr say it failed.
			if werr := writeJSON(o.cmd, status.NewError(err)); werr != nil {
				return werr
			}
		}
		return err
	}
	if o.asJSON {
		if err := writeJSON(o.cmd, rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(o.cmd.OutOrStdout()); err != nil {
		return err
	}
	if kafkaErr != nil {
		return fmt.Errorf("the Kafka part of the status is missing: %w", kafkaErr)
	}
	return nil
}

// readStatus reads the report (package status, which the console shows
// too): the database's part or an error, then Kafka's, whose failure is
// reported in the report and returned as kafkaErr.
func readStatus(ctx context.Context, db *dbFlags, kf *kafkaFlags, topics, groups []string) (rep status.Report, kafkaErr, err error) {
	conn, err := db.openMigrated(ctx)
	if err != nil {
		return rep, nil, err
	}
	defer conn.Close()
	if rep, err = status.Read(ctx, store.New(conn, db.dialect())); err != nil {
		return rep, nil, err
	}
	// Kafka is reported on, not required: the database view is what an
	// operator needs first when the cluster is the problem. The exit code
	// still says the status is incomplete.
	actx, cancel := context.WithTimeout(ctx, status.KafkaTimeoutDefault)
	defer cancel()
	adm, err := kf.admin(actx)
	if err != nil {
		return rep, rep.KafkaFailed(err), nil
	}
	defer adm.Close()
	return rep, rep.ReadKafka(ctx, adm, topics, groups), nil
}
