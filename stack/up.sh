#!/usr/bin/env bash
# up.sh: install what is missing, then start MariaDB, PostgreSQL and Apache
# Kafka (KRaft).
# Idempotent: a second run finds everything running and changes nothing.
#
#   KAFKA_BROKERS=3 stack/up.sh    three brokers on 9092-9094 + a controller
set -euo pipefail
source "$(dirname "$0")/lib.sh"
NODE="$REPO_DIR/stack/node.sh"
source "$REPO_DIR/stack/postgres/setup.sh"

case "$KAFKA_BROKERS" in 1|3) ;; *) fail "KAFKA_BROKERS must be 1 or 3, not '$KAFKA_BROKERS'" ;; esac

install_packages() {
  local missing=()
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
  command -v mariadb >/dev/null || missing+=(mariadb-client)
  command -v kcat >/dev/null || missing+=(kcat)
  pg_bin >/dev/null || missing+=(postgresql)
  command -v java >/dev/null || missing+=(default-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  [ -d /usr/share/zoneinfo ] || missing+=(tzdata)
  [ ${#missing[@]} -eq 0 ] && return 0
  step "install ${missing[*]} (apt)"
  [ "$(id -u)" = 0 ] || fail "installing ${missing[*]} needs root (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || fail "apt-get update"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]}"
}

configure_mariadb() {
  mkdir -p "$MARIADB_DIR/log" "$MARIADB_DIR/binlog"
  sed "s|@STACK_DIR@|$STACK_DIR|g" "$REPO_DIR/stack/mariadb/my.cnf" >"$MARIADB_CNF.new"
  mv "$MARIADB_CNF.new" "$MARIADB_CNF"
  chown -R mysql:mysql "$MARIADB_DIR"
  if [ ! -d "$MARIADB_DIR/data/mysql" ]; then
    step "initialise mariadb data directory"
    mariadb-install-db --defaults-file="$MARIADB_CNF" --auth-root-authentication-method=socket \
      --skip-test-db >"$MARIADB_DIR/log/install.log" 2>&1 \
      || fail "mariadb-install-db (log: $MARIADB_DIR/log/install.log)"
  fi
}

# The application user: everything on herald* databases (tests use one
# database each), plus what a binlog reader needs.
create_herald_user() {
  step "create database herald and user herald"
  mariadb --socket="$MARIADB_SOCKET" -uroot <<'SQL' || fail "create user herald"
CREATE DATABASE IF NOT EXISTS herald CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'herald'@'127.0.0.1' IDENTIFIED BY 'herald';
CREATE USER IF NOT EXISTS 'herald'@'localhost' IDENTIFIED BY 'herald';
GRANT ALL PRIVILEGES ON `herald%`.* TO 'herald'@'127.0.0.1', 'herald'@'localhost';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, PROCESS ON *.* TO 'herald'@'127.0.0.1', 'herald'@'localhost';
SQL
}

# Named time zones (CONVERT_TZ, SET time_zone = 'Europe/Berlin'), as
# services outside UTC use them: herald's tests write through such sessions.
# Loaded once, outside the binlog.
load_time_zones() {
  local zones
  zones=$(mariadb --socket="$MARIADB_SOCKET" -uroot -N -e "SELECT COUNT(*) FROM mysql.time_zone_name") \
    || fail "count time zones"
  [ "$zones" -gt 0 ] && return 0
  step "load time zones into mariadb"
  command -v mariadb-tzinfo-to-sql >/dev/null || fail "mariadb-tzinfo-to-sql is missing (package mariadb-server)"
  [ -d /usr/share/zoneinfo ] || fail "/usr/share/zoneinfo is missing (package tzdata)"
  { echo "SET SESSION sql_log_bin = 0;"; mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null; } \
    | mariadb --socket="$MARIADB_SOCKET" -uroot mysql || fail "load time zones"
}

resolve_kafka_jars() {
  local jars
  jars=$(kafka_jars_dir)
  [ -f "$jars/.complete" ] && return 0
  step "resolve kafka jars from Maven Central into $jars"
  rm -rf "$jars"
  mvn -q -B -Dstyle.color=never -f "$REPO_DIR/stack/kafka/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$jars" || fail "maven could not resolve the kafka jars"
  touch "$jars/.complete"
}

write_kafka_node_config() {
  local id=$1 dir port roles listeners advertised
  dir=$KAFKA_DIR/node-$id
  mkdir -p "$dir/data" "$dir/log"
  local rf=1 isr=1
  [ "$KAFKA_BROKERS" = 3 ] && rf=3 isr=2
  if [ "$KAFKA_BROKERS" = 1 ]; then
    roles=broker,controller
    listeners="PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092"
    advertised="PLAINTEXT://127.0.0.1:9092"
    voters="1@127.0.0.1:19092"
  elif [ "$id" = "$KAFKA_CONTROLLER_ID" ]; then
    roles=controller
    listeners="CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT"
    advertised=""
    voters="$KAFKA_CONTROLLER_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT"
  else
    roles=broker
    port=$(kafka_broker_port "$id")
    listeners="PLAINTEXT://127.0.0.1:$port"
    advertised="PLAINTEXT://127.0.0.1:$port"
    voters="$KAFKA_CONTROLLER_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT"
  fi
  cat >"$dir/server.properties" <<PROPS
# Written by stack/up.sh; edits are overwritten.
process.roles=$roles
node.id=$id
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=$listeners
${advertised:+advertised.listeners=$advertised}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
log.retention.hours=48
log.segment.bytes=268435456
PROPS
}

configure_kafka() {
  local want have id
  want="$KAFKA_BROKERS"
  have=$(cat "$KAFKA_DIR/brokers" 2>/dev/null || echo none)
  if [ "$have" != "$want" ] && [ "$have" != none ]; then
    step "switch kafka from $have to $want broker(s): stop it and wipe its topics"
    for id in $(kafka_running_nodes); do "$NODE" stop "kafka-$id"; done
    rm -rf "$KAFKA_DIR"
  fi
  mkdir -p "$KAFKA_DIR"
  echo "$want" >"$KAFKA_DIR/brokers"
  local jars
  jars=$(kafka_jars_dir)
  if [ ! -s "$KAFKA_DIR/cluster.id" ]; then
    java -cp "$jars/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$KAFKA_DIR/cluster.id" \
      || fail "kafka-storage random-uuid"
  fi
  for id in $(kafka_nodes); do
    write_kafka_node_config "$id"
    if [ ! -f "$KAFKA_DIR/node-$id/data/meta.properties" ]; then
      step "format kafka node $id storage"
      java -cp "$jars/*" -Dlog4j2.configurationFile="$REPO_DIR/stack/kafka/log4j2.xml" \
        -Dkafka.logs.dir="$KAFKA_DIR/node-$id/log" kafka.tools.StorageTool format \
        -t "$(cat "$KAFKA_DIR/cluster.id")" -c "$KAFKA_DIR/node-$id/server.properties" \
        >"$KAFKA_DIR/node-$id/log/format.log" 2>&1 \
        || fail "kafka-storage format (log: $KAFKA_DIR/node-$id/log/format.log)"
    fi
  done
}

start=$(date +%s)
install_packages
configure_mariadb
"$NODE" start mariadb
create_herald_user
load_time_zones
up_postgres
resolve_kafka_jars
configure_kafka
for id in $(kafka_nodes); do "$NODE" start "kafka-$id"; done
step_name=""

cat <<INFO
herald stack is up ($(( $(date +%s) - start )) s)
  MariaDB  127.0.0.1:3306  user herald / herald, database herald
           HERALD_MYSQL_DSN default: herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC
           log: $MARIADB_DIR/log/error.log   binlog: $MARIADB_DIR/binlog
  PostgreSQL 127.0.0.1:5432  role herald / herald, database herald
           HERALD_DATABASE_URL for it: postgres://herald:herald@127.0.0.1:5432/herald?sslmode=disable
           log: $PG_LOG
  Kafka    $(kafka_bootstrap)  ($KAFKA_BROKERS broker(s), KRaft)
           logs: $KAFKA_DIR/node-*/log/server.log
INFO
