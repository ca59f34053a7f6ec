package cli

import (
	"fmt"
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

func newTopicsCreateCommand() *cobra.Command {
	var (
		kf            kafkaFlags
		partitions    int32
		replication   int16
		minISR        int
		configs       []string
		allowKeyRemap bool
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC...",
		Short: "Create topics, or check existing ones (adding partitions needs --allow-key-remap)",
		Long: `Create each topic with the given partitions, replication factor and
min.insync.replicas. An existing topic is left alone when it already has the
partitions asked for. Asking for MORE partitions than an existing topic has is
refused unless --allow-key-remap is given: Kafka places a key by hashing it
modulo the partition count, so adding partitions moves most aggregates to
another partition and breaks per-aggregate ordering for consumers until the
old partitions are drained.

On a one-broker development stack use --replication-factor 1 --min-insync-replicas 1.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			if partitions < 1 {
				return usageError{fmt.Errorf("--partitions: must be at least 1, got %d", partitions)}
			}
			if replication < 1 {
				return usageError{fmt.Errorf("--replication-factor: must be at least 1, got %d", replication)}
			}
			if minISR < 1 || minISR > int(replication) {
				return usageError{fmt.Errorf("--min-insync-replicas: must be 1..%d (the replication factor), got %d", replication, minISR)}
			}
			extra := map[string]string{}
			for _, c := range configs {
				k, v, ok := strings.Cut(c, "=")
				if !ok || k == "" {
					return usageError{fmt.Errorf("--config: %q: want key=value", c)}
				}
				extra[k] = v
			}
			adm, err := kf.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer adm.Close()
			for _, topic := range topics {
				change, err := kafka.EnsureTopic(cmd.Context(), adm, kafka.TopicSpec{
					Name: topic, Partitions: partitions, ReplicationFactor: replication,
					MinInsyncReplicas: minISR, Configs: extra,
				}, allowKeyRemap)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", topic, change)
			}
			return nil
		},
	}
	env := envFlags{}
	kf.register(cmd, env)
	cmd.Flags().Int32Var(&partitions, "partitions", kafka.TopicPartitionsDefault, "partitions per topic")
	cmd.Flags().Int16Var(&replication, "replication-factor", kafka.TopicReplicationFactorDefault, "replicas per partition")
	cmd.Flags().IntVar(&minISR, "min-insync-replicas", kafka.TopicMinInsyncReplicasDefault,
		"replicas that must acknowledge an acks=all write")
	cmd.Flags().StringArrayVar(&configs, "config", nil, "extra topic config key=value (repeatable)")
	cmd.Flags().BoolVar(&allowKeyRemap, "allow-key-remap", false,
		"allow adding partitions to an existing topic, knowing keys move and ordering breaks")
	env.bind(cmd)
	return cmd
}

func newTopicsDescribeCommand() *cobra.Command {
	var (
		kf     kafkaFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "describe TOPIC...",
		Short: "Show partitions, leaders, in-sync replicas and main configs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, topics []string) error {
			adm, err := kf.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer adm.Close()
			descs, err := kafka.DescribeTopics(cmd.Context(), adm, topics...)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd, descs)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, d := range descs {
				fmt.Fprintf(w, "topic %s: %d partitions, replication factor %d, configs %v\n",
					d.Name, len(d.Partitions), d.ReplicationFactor, d.Configs)
				fmt.Fprintln(w, "  PARTITION\tLEADER\tREPLICAS\tISR")
				for _, p := range d.Partitions {
					fmt.Fprintf(w, "  %d\t%d\t%v\t%v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
				}
			}
			return w.Flush()
		},
	}
	env := envFlags{}
	kf.register(cmd, env)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	env.bind(cmd)
	return cmd
}
