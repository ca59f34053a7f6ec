// Package localstack says where herald finds its servers when nothing else is
// configured: the MariaDB, PostgreSQL and Kafka that `make up` starts,
// overridable by the HERALD_MYSQL_DSN, HERALD_POSTGRES_URL and
// HERALD_KAFKA_BROKERS environment variables; and how the tests and
// benchmarks reach into that stack (MariaDB's root, its servers' CPU time).
//
// Start at DatabaseURL and KafkaBrokers: what a test or a benchmark
// connects to; the CPU readings (MariaDBCPU, PostgresCPU, KafkaCPU) are
// the benchmarks'.
package localstack
