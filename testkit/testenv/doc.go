// Package testenv gives tests the real servers of the local stack: a fresh
// MariaDB database per test and fresh Kafka topics.
//
// A test that needs a server which does not answer fails; under
// `go test -short` it is skipped instead. `make test` never passes -short, so
// a missing server there is a failure, not a silent skip.
//
// Start at NewHeraldDatabase (a migrated database of its own), KafkaBrokers
// and NewTopic; StartProcess and Binary run herald's binaries as real
// processes, for the crash tests.
package testenv
