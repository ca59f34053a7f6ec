package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/kafka"
)

func newTopicsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Create and describe herald's Kafka topics",
	}
	cmd.AddCommand(newTopicsCreateCommand(), newTopicsDescribeCommand())
	return cmd
}

// topicsCreateOptions are herald topics create's flags. validate checks
// them and the topic names before Kafka is asked; run creates the topics,
// or compares the existing ones with what was asked.
type topicsCreateOptions struct {
	cmd *cobra.Command // which flags were given; where the command writes

	kafka         kafkaFlags
	partitions    int32
	replication   int16
	minISR        int
	configs       []string
	allowKeyRemap bool
	allowDiffs    bool
	maxRecord     int

	// What validate read, for run.
	topics []string
	extra  map[string]string // --config
}

func newTopicsCreateCommand() *cobra.Command {
	o := &topicsCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics, or check existing ones (adding partitions needs --allow-key-remap)",
		Long: `Create each topic with the given partitions, replication factor,
min.insync.replicas and configs, and max.message.bytes = --max-record-bytes
(the relays' record limit) unless --config sets it.

An existing topic is compared with what was asked: each difference in
replication factor, min.insync.replicas or a --config value, and a
max.message.bytes below --max-record-bytes, is reported, and the command
exits 1 unless --allow-differences is given. It changes none of them (use
your Kafka tooling, e.g. kafka-configs --alter).

Asking for MORE partitions than an existing topic has is refused unless
--allow-key-remap is given: Kafka places a key by hashing it modulo the
partition count, so adding partitions moves most aggregates to another
partition and breaks per-aggregate ordering for consumers until the old
partitions are drained.

Without --replication-factor, a cluster of fewer than 3 brokers (a
development stack) gets one replica per broker and, without
--min-insync-replicas, one in-sync replica fewer than that (at least 1); the
command says so.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			if err := o.validate(topics); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the command's flags to cmd, bound to o.
func (o *topicsCreateOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.kafka.register(cmd, env)
	f := cmd.Flags()
	f.Int32Var(&o.partitions, "partitions", kafka.TopicPartitionsDefault, "partitions per topic")
	f.Int16Var(&o.replication, "replication-factor", kafka.TopicReplicationFactorDefault, "replicas per partition")
	f.IntVar(&o.minISR, "min-insync-replicas", kafka.TopicMinInsyncReplicasDefault,
		"replicas that must acknowledge an acks=all write")
	f.StringArrayVar(&o.configs, "config", nil, "extra topic config key=value (repeatable)")
	f.BoolVar(&o.allowKeyRemap, "allow-key-remap", false,
		"allow adding partitions to an existing topic, knowing keys move and ordering breaks")
	f.BoolVar(&o.allowDiffs, "allow-differences", false,
		"exit 0 although an existing topic differs from what was asked (the differences are still shown)")
	maxRecordBytesFlag(cmd, env, &o.maxRecord)
	env.bind(cmd)
}

// validate checks the flags and the topic names; the replication factor
// against the cluster's size is run's to check.
func (o *topicsCreateOptions) validate(topics []string) error {
	if o.partitions < 1 {
		return usageError{fmt.Errorf("--partitions: must be at least 1, got %d", o.partitions)}
	}
	if o.replication < 1 {
		return usageError{fmt.Errorf("--replication-factor: must be at least 1, got %d", o.replication)}
	}
	if o.minISR < 1 || o.minISR > int(o.replication) && o.cmd.Flags().Changed("replication-factor") {
		return usageError{fmt.Errorf("--min-insync-replicas: must be 1..%d (the replication factor), got %d", o.replication, o.minISR)}
	}
	if err := kafka.ValidateMaxRecordBytes(o.maxRecord); err != nil {
		return usageError{fmt.Errorf("--max-record-bytes: %w", err)}
	}
	if err := validateTopicNames(topics); err != nil {
		return err
	}
	o.topics = topics
	o.extra = map[string]string{}
	for _, c := range o.configs {
		k, v, ok := strings.Cut(c, "=")
		if !ok || k == "" {
			return usageError{fmt.Errorf("--config: %q: want key=value", c)}
		}
		o.extra[k] = v
	}
	if v, ok := o.extra["max.message.bytes"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < o.maxRecord {
			return usageError{fmt.Errorf("--config max.message.bytes=%s: below --max-record-bytes (%d), so the topic "+
				"would refuse records the relays send; lower --max-record-bytes with the relays' (HERALD_MAX_RECORD_BYTES) "+
				"or drop this --config", v, o.maxRecord)}
		}
	}
	return nil
}

// run fits the replication factor to a smaller cluster when it was not
// given, then creates each topic or reports how an existing one differs.
func (o *topicsCreateOptions) run(ctx context.Context) error {
	out := o.cmd.OutOrStdout()
	adm, err := o.kafka.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	replication, minISR := o.replication, o.minISR
	if !o.cmd.Flags().Changed("replication-factor") {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return fmt.Errorf("count the brokers: %w", err)
		}
		if brokers := len(md.Brokers); brokers < int(replication) {
			replication = int16(brokers)
			if !o.cmd.Flags().Changed("min-insync-replicas") {
				minISR = max(1, brokers-1)
			}
			fmt.Fprintf(out, "the cluster has %d broker(s): replication factor %d, min.insync.replicas %d\n",
				brokers, replication, minISR)
		}
	}
	if minISR > int(replication) {
		return usageError{fmt.Errorf("--min-insync-replicas: must be 1..%d (the replication factor), got %d", replication, minISR)}
	}
	var differing []string
	for _, topic := range o.topics {
		spec := kafka.TopicSpec{
			Name: topic, Partitions: o.partitions, ReplicationFactor: replication,
			MinInsyncReplicas: minISR, Configs: o.extra, MaxRecordBytes: o.maxRecord,
		}
		change, err := kafka.EnsureTopic(ctx, adm, spec, o.allowKeyRemap)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s\n", topic, change)
		if change == kafka.TopicCreated {
			continue
		}
		diffs, err := kafka.CompareTopic(ctx, adm, spec)
		if err != nil {
			return err
		}
		for _, d := range diffs {
			fmt.Fprintf(out, "  differs: %s\n", d)
		}
		if len(diffs) > 0 {
			differing = append(differing, topic)
		}
	}
	if len(differing) > 0 && !o.allowDiffs {
		return fmt.Errorf("existing topic(s) %s differ from what was asked (see above), and herald changed "+
			"none of it: alter them with your Kafka tooling, or rerun with --allow-differences to accept them as they are",
			strings.Join(differing, ", "))
	}
	return nil
}

// topicsDescribeOptions are herald topics describe's flags.
type topicsDescribeOptions struct {
	cmd *cobra.Command // where the command writes

	kafka     kafkaFlags
	asJSON    bool
	maxRecord int

	topics []string // what validate checked
}

func newTopicsDescribeCommand() *cobra.Command {
	o := &topicsDescribeOptions{}
	cmd := &cobra.Command{
		Use:   "describe TOPIC...",
		Short: "Show partitions, leaders, in-sync replicas and main configs; check max.message.bytes",
		Long: `Show each topic's partitions, leaders, replicas, in-sync replicas and main
configs, and warn when its max.message.bytes is below --max-record-bytes (the
relays' record limit): such a topic refuses some events the outbox writer
accepts, and the relay quarantines them as too_large.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			if err := o.validate(topics); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the command's flags to cmd, bound to o.
func (o *topicsDescribeOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.kafka.register(cmd, env)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	maxRecordBytesFlag(cmd, env, &o.maxRecord)
	env.bind(cmd)
}

// validate checks --max-record-bytes and the topic names.
func (o *topicsDescribeOptions) validate(topics []string) error {
	if err := kafka.ValidateMaxRecordBytes(o.maxRecord); err != nil {
		return usageError{fmt.Errorf("--max-record-bytes: %w", err)}
	}
	o.topics = topics
	return validateTopicNames(topics)
}

// run prints each topic's partitions and configs, warning of a
// max.message.bytes below the relays' record limit.
func (o *topicsDescribeOptions) run(ctx context.Context) error {
	adm, err := o.kafka.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	descs, err := kafka.DescribeTopics(ctx, adm, o.topics...)
	if err != nil {
		return err
	}
	for i := range descs {
		if err := kafka.CheckTopicLimit(descs[i], o.maxRecord); err != nil {
			descs[i].Warnings = append(descs[i].Warnings, err.Error())
		}
	}
	if o.asJSON {
		return writeJSON(o.cmd, descs)
	}
	w := tabwriter.NewWriter(o.cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	for _, d := range descs {
		fmt.Fprintf(w, "topic %s: %d partitions, replication factor %d, configs %v\n",
			d.Name, len(d.Partitions), d.ReplicationFactor, d.Configs)
		fmt.Fprintln(w, "  PARTITION\tLEADER\tREPLICAS\tISR")
		for _, p := range d.Partitions {
			fmt.Fprintf(w, "  %d\t%d\t%v\t%v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
		}
		for _, warning := range d.Warnings {
			fmt.Fprintf(w, "  WARNING: %s\n", warning)
		}
	}
	return w.Flush()
}

// maxRecordBytesFlag registers --max-record-bytes, the relays' record limit,
// with the relay's environment variable, so one setting serves both.
func maxRecordBytesFlag(cmd *cobra.Command, env envFlags, v *int) {
	cmd.Flags().IntVar(v, "max-record-bytes", kafka.MaxRecordBytesDefault,
		"the relays' record limit (herald relay --max-record-bytes)")
	env["max-record-bytes"] = "HERALD_MAX_RECORD_BYTES"
}
