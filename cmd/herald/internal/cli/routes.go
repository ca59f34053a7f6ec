package cli

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
)

// routeFlags are the relay's routing flags, --topic and --default-topic
// with the relay's HERALD_TOPICS and HERALD_DEFAULT_TOPIC, for the commands
// that must see the topics a relay would publish to (replay, status).
type routeFlags struct {
	entries      []string
	defaultTopic string
}

func (f *routeFlags) register(cmd *cobra.Command, env envFlags) {
	cmd.Flags().StringSliceVar(&f.entries, "topic", defaultRoutes(),
		"routes aggregate_type=topic, as for herald relay (repeatable or comma-separated)")
	cmd.Flags().StringVar(&f.defaultTopic, "default-topic", "",
		"topic of aggregate types no --topic names, as for herald relay")
	env["topic"] = "HERALD_TOPICS"
	env["default-topic"] = "HERALD_DEFAULT_TOPIC"
}

// defaultRoutes are relay.TopicsDefault as --topic entries, the default of
// every command's --topic (the relay's too).
func defaultRoutes() []string {
	var routes []string
	for typ, topic := range relay.TopicsDefault {
		routes = append(routes, typ+"="+topic)
	}
	sort.Strings(routes)
	return routes
}

// parse returns the routes and the default topic, checked as the relay
// checks them.
func (f *routeFlags) parse() (map[string]string, string, error) {
	routes, err := parseTopicRoutes(f.entries)
	if err != nil {
		return nil, "", err
	}
	if f.defaultTopic != "" {
		if err := kafka.ValidateTopicName(f.defaultTopic); err != nil {
			return nil, "", usageError{fmt.Errorf("--default-topic: %w", err)}
		}
	}
	return routes, f.defaultTopic, nil
}

// liveTopics returns the distinct topics of routes and defaultTopic, sorted.
func liveTopics(routes map[string]string, defaultTopic string) []string {
	set := map[string]bool{}
	for _, topic := range routes {
		set[topic] = true
	}
	if defaultTopic != "" {
		set[defaultTopic] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// validateTopicNames checks topic names given as arguments.
func validateTopicNames(topics []string) error {
	for _, topic := range topics {
		if err := kafka.ValidateTopicName(topic); err != nil {
			return usageError{err}
		}
	}
	return nil
}
