# herald: make up | test | test-cluster | drill | drill-postgres | demo | down | reset
# Every target that needs servers starts them first (stack/up.sh is idempotent).

GO ?= go
GOTEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: up down reset test test-cluster build vet drill drill-postgres demo bench test-rules

up:
	stack/up.sh

down:
	stack/down.sh

reset:
	stack/reset.sh

# Compiles everything and puts the binaries the drills and the demo run into
# bin/: herald, orders, inventory, warehouse.
build:
	$(GO) build ./...
	$(GO) build -o bin/ ./cmd/herald ./examples/warehouse && cd cmd/herald/internal/drill/services && $(GO) build -o ../../../../../bin/ ./orders ./inventory

# One pass with every build tag: no file is built only without a tag.
vet:
	$(GO) vet -tags cluster,disruptive ./...
	cd cmd/herald/internal/drill/services && $(GO) vet ./...

# Every test, against the real servers; a server that does not answer is a
# failure (herald's tests only skip under -short, never passed to them).
# Four packages at a time: the tests mostly wait (for leases to expire,
# processes to start, Kafka to answer), two cores stay a third idle with
# two (make test measured 752 s with the default of two, the go test
# phase 470 s against 400 s with four).
# Then, serially and alone, the disruptive tests (build tag disruptive,
# names TestDisruptive*): they stop servers, which would break any test
# running beside them. The bench module (a module of its own, so ./...
# does not reach it) is vetted and its pure parts tested (-short: its
# smoke run of every peer, 1-2 minutes, is `cd bench && go test ./...`),
# so a change to the packages it shares with herald cannot break it unseen.
TEST_PACKAGES ?= 4
test: up vet test-rules
	$(GO) test $(GOTEST_FLAGS) -p $(TEST_PACKAGES) ./...
	cd bench && $(GO) vet ./... && $(GO) test $(GOTEST_FLAGS) -short ./...
	$(GO) test $(GOTEST_FLAGS) -p 1 -tags disruptive -run 'TestDisruptive' ./...

# Prometheus's own tools at the version deploy/prometheus/go.mod pins (a
# module of its own: prometheus/prometheus stays out of herald's go.mod),
# built into bin/prometheus/ (a cold build downloads and compiles the
# module, a few minutes; afterwards Go's cache makes it seconds).
PROMETHEUS_BIN := $(CURDIR)/bin/prometheus
PROMTOOL := $(PROMETHEUS_BIN)/promtool
$(PROMTOOL): deploy/prometheus/go.mod
	cd deploy/prometheus && GOBIN=$(PROMETHEUS_BIN) $(GO) install github.com/prometheus/prometheus/cmd/promtool

# The alerting and recording rules checked and run by Prometheus's rule
# engine against synthetic series (deploy/prometheus/tests), every alert
# with a test of its own; needs no server (about 3 s once promtool is built).
test-rules: $(PROMTOOL)
	$(PROMTOOL) check rules deploy/prometheus/herald-alerts.yml
	cd deploy/prometheus/tests && $(PROMTOOL) test rules *.yml
	@for a in $$(sed -n 's/^ *- alert: //p' deploy/prometheus/herald-alerts.yml); do \
		grep -q "alertname=\"$$a\"" deploy/prometheus/tests/*.yml || { echo "alert $$a has no rule test"; exit 1; }; done

# Replication tests on a three-broker cluster: stops and restarts brokers.
test-cluster:
	KAFKA_BROKERS=3 stack/up.sh
	$(GO) test $(GOTEST_FLAGS) -tags cluster -run 'TestCluster' ./...

# Fault drills: the whole pipeline as processes, one fault per drill, then
# verification; stops and restarts a broker and MariaDB (restored after).
# Both relay sources: every drill with polling relays, then with relays
# streaming the binlog (--source binlog) the drills whose outcome depends on
# the relays' source (the consumer and orders drills do not).
# Writes docs/drills/latest.md and latest-binlog.md (committed), and their
# .json (ignored).
DRILL_EVENTS ?= 300
DRILL ?= all
DRILL_BINLOG ?= committed-relay-not-run,stream-crash-after-ack,stream-crash-after-read,kafka-broker-restart,database-restart
drill: up build
	bin/herald drill --drill $(DRILL) --events $(DRILL_EVENTS) --report docs/drills/latest.json
	bin/herald drill --source binlog --drill $(DRILL_BINLOG) --events $(DRILL_EVENTS) --report docs/drills/latest-binlog.json

# The same drills with PostgreSQL as the database: its restart (stack/node.sh
# stop|start postgres) in place of MariaDB's; then, with relays streaming
# the WAL (--source wal), the drills whose outcome depends on the source,
# the stream's crash windows and the slot dropped under the leader. Writes
# docs/drills/latest-postgres.md and latest-postgres-wal.md (committed),
# and their .json.
DRILL_POSTGRES_URL ?= postgres://herald:herald@127.0.0.1:5432/herald?sslmode=disable
DRILL_WAL ?= committed-relay-not-run,stream-crash-after-read,stream-crash-after-ack,stream-slot-dropped,kafka-broker-restart,database-restart
drill-postgres: up build
	bin/herald drill --drill $(DRILL) --events $(DRILL_EVENTS) --database-url '$(DRILL_POSTGRES_URL)' \
		--report docs/drills/latest-postgres.json
	bin/herald drill --source wal --drill $(DRILL_WAL) --events $(DRILL_EVENTS) --database-url '$(DRILL_POSTGRES_URL)' \
		--report docs/drills/latest-postgres-wal.json

# The pipeline with a steady load and no fault, on one live status line.
DEMO_DURATION ?= 1m
demo: up build
	bin/herald demo --duration $(DEMO_DURATION)

# herald beside the reference loop, Watermill's forwarder and Debezium on
# the local stack, in one run of interleaved repetitions (bench/, a module
# of its own). Writes docs/benchmarks/peers.json, peers.md and the SVG
# charts. The defaults (2 repetitions, 100,000-event drains) took 13
# minutes on the 2-core machine: the run prints its plan and estimate first.
# BENCH_REPS, BENCH_EVENTS, BENCH_SUSTAINED, BENCH_DELIVERY,
# BENCH_DRAIN_BUDGET, BENCH_REFERENCE_BUDGET and BENCH_PEERS override them;
# a quick trial: BENCH_REPS=1 BENCH_EVENTS=5000 BENCH_SUSTAINED=5s
# BENCH_DELIVERY=5s make bench. It drops its databases and topics, purges
# the binlogs and stops every process it started, also when interrupted.
# Then the cost of the SQL contract (bare transaction, Go writer, plain SQL
# through the trigger, on MariaDB and PostgreSQL; under a minute): writes
# docs/benchmarks/writers.md. BENCH_WRITERS_ROUNDS, BENCH_WRITERS_TX.
# Then one transaction of 1,000,000 events through each source, binlog and
# poll on MariaDB, wal and poll on PostgreSQL (docs/benchmarks/bigtx.md;
# about 15 minutes, BENCH_BIGTX_SOURCES to choose), and the WAL source's
# slot on an idle outbox beside a table taking 1,000 writes/s for 5 minutes
# (printed; docs/benchmarks.md, "The PostgreSQL change stream").
bench: up
	bench/debezium/build.sh || echo "make bench: the Debezium build failed: the run reports Debezium as a gap, with the error"
	cd bench && $(GO) run . run
	cd bench && $(GO) run . writers
	cd bench && $(GO) run . bigtx
	$(GO) test -run '^$$' -bench BenchmarkSlotRetention -benchtime 1x -timeout 20m ./relay/
	$(GO) test -run '^$$' -bench 'BenchmarkRelay/(mariadb|postgres)/sustained|BenchmarkRelay/postgres/drain/interleaved|BenchmarkRelay/postgres/delivery' -benchtime 1x -timeout 120m ./relay/ -args -relay.bench-sustained=30s
