#!/usr/bin/env bash
# node.sh start|stop|status mariadb|postgres|kafka-ID
#
# Starts or stops one process of the local stack. stack/up.sh uses it for the
# whole stack; tests and drills use it to stop and restart a single broker or
# the database. Start assumes stack/up.sh has installed and configured things.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

usage() { echo "usage: $0 start|stop|status mariadb|postgres|kafka-ID" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1 target=$2

mariadb_query() {
  mariadb --socket="$MARIADB_SOCKET" -uroot -N -B -e "$1"
}

start_mariadb() {
  if alive "$MARIADB_PIDFILE"; then
    return 0
  fi
  step "start mariadb"
  # --pidfile: a mariadbd of another stack (HERALD_STACK_DIR) is not this one.
  start-stop-daemon --start --background --pidfile "$MARIADB_PIDFILE" --exec /usr/sbin/mariadbd -- \
    --defaults-file="$MARIADB_CNF"
  step "wait for mariadb"
  local i
  for i in $(seq 1 300); do
    if mariadb_query 'SELECT 1' >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  tail -n 20 "$MARIADB_DIR/log/error.log" >&2 || true
  fail "mariadb did not answer on $MARIADB_SOCKET within 60 s (log: $MARIADB_DIR/log/error.log)"
}

pg_ctl() {
  pg_as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" "$@"
}

# start_postgres: pg_ctl detaches the server from this shell and waits
# until it accepts connections.
start_postgres() {
  [ -f "$PG_CONF" ] || fail "postgresql is not configured; run make up"
  pg_ctl status >/dev/null 2>&1 && return 0
  step "start postgresql"
  pg_ctl start -w -t 60 -l "$PG_LOG" -o "-c config_file=$PG_CONF" >/dev/null \
    || { tail -n 20 "$PG_LOG" >&2 || true; fail "postgresql did not start within 60 s (log: $PG_LOG)"; }
}

# stop_postgres: a fast shutdown (open transactions roll back, clients are
# disconnected, the server checkpoints), as MariaDB's SIGTERM.
stop_postgres() {
  step "stop postgresql"
  pg_ctl status >/dev/null 2>&1 || return 0
  pg_ctl stop -m fast -w -t 60 >/dev/null || fail "postgresql did not stop within 60 s (log: $PG_LOG)"
}

kafka_node_dir() { echo "$KAFKA_DIR/node-$1"; }

start_kafka() {
  local id=$1 dir jars heap
  dir=$(kafka_node_dir "$id")
  [ -f "$dir/server.properties" ] || fail "kafka node $id is not configured; run make up"
  if alive "$dir/kafka.pid"; then
    return 0
  fi
  step "start kafka node $id"
  jars=$(kafka_jars_dir)
  heap="-Xms768m -Xmx768m"
  [ "$id" = "$KAFKA_CONTROLLER_ID" ] && heap="-Xms256m -Xmx256m"
  mkdir -p "$dir/log"
  # setsid: the broker outlives the shell (and the make) that started it.
  setsid java $heap -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dkafka.logs.dir="$dir/log" \
    -Dlog4j2.configurationFile="$REPO_DIR/stack/kafka/log4j2.xml" \
    -cp "$jars/*" kafka.Kafka "$dir/server.properties" \
    >"$dir/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/kafka.pid"
}

# wait_kafka ID: the node answers a metadata request (kcat, an independent
# client). A controller-only node has no client listener: wait for its port.
wait_kafka() {
  local id=$1 dir port i
  dir=$(kafka_node_dir "$id")
  step "wait for kafka node $id"
  for i in $(seq 1 600); do
    alive "$dir/kafka.pid" || { tail -n 20 "$dir/log/stdout.log" >&2; fail "kafka node $id exited (log: $dir/log/server.log)"; }
    if [ "$id" = "$KAFKA_CONTROLLER_ID" ]; then
      (echo >"/dev/tcp/127.0.0.1/$KAFKA_CONTROLLER_PORT") 2>/dev/null && return 0
    else
      port=$(kafka_broker_port "$id")
      kcat -b "127.0.0.1:$port" -L -m 2 2>/dev/null | grep -q "broker $id at" && return 0
    fi
    sleep 0.2
  done
  fail "kafka node $id did not answer within 120 s (log: $dir/log/server.log)"
}

case "$action:$target" in
  start:mariadb) start_mariadb ;;
  stop:mariadb) step "stop mariadb"; stop_pidfile "$MARIADB_PIDFILE" mariadb ;;
  status:mariadb) alive "$MARIADB_PIDFILE" && echo running || { echo stopped; exit 1; } ;;
  start:postgres) start_postgres ;;
  stop:postgres) stop_postgres ;;
  status:postgres) [ -f "$PG_CONF" ] && pg_ctl status >/dev/null 2>&1 && echo running || { echo stopped; exit 1; } ;;
  start:kafka-*) start_kafka "${target#kafka-}"; wait_kafka "${target#kafka-}" ;;
  stop:kafka-*) step "stop kafka node ${target#kafka-}"; stop_pidfile "$(kafka_node_dir "${target#kafka-}")/kafka.pid" "kafka node ${target#kafka-}" ;;
  status:kafka-*) alive "$(kafka_node_dir "${target#kafka-}")/kafka.pid" && echo running || { echo stopped; exit 1; } ;;
  *) usage ;;
esac
step_name=""
