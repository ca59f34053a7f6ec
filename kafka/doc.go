// Package kafka is herald's plumbing over franz-go: the producer the relay
// publishes with, consumer-group helpers for the inbox, and topic
// administration.
package kafka
