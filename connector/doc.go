// Package connector reads a Debezium connector's configuration (a Java
// properties file, or Kafka Connect's JSON as its REST API takes it) into
// what herald needs to relay the same outbox table the same way: the
// table's mapping (migrations.Mapping) and the debezium record format's
// settings (record.DebeziumConfig). docs/from-debezium.md lists every
// property it reads, ignores or refuses.
//
// Start at ReadFile (or Properties, for a configuration already in
// memory) and Interpret, which returns the Settings: herald migrate up
// --mapping and herald relay --mapping use them.
package connector
