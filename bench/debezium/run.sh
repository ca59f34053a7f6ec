#!/usr/bin/env bash
# run.sh: Debezium's MariaDB connector with the Outbox Event Router, in Kafka
# Connect standalone mode, reading herald's outbox table from the binlog and
# writing every event to one topic. Configured only by the environment (see
# README.md); writes the worker's and the connector's properties into
# DBZ_STATE_DIR and execs the JVM, so the caller's PID is the worker's.
# SIGTERM stops it cleanly (offsets saved). A connector or task that FAILS
# is printed on stderr and the worker is stopped (exit status non-zero).
# Optional: DBZ_CONNECTOR_EXTRA (more connector properties), DBZ_EXTRA_CONNECTORS
# (more connectors in the same worker), DBZ_DRY_RUN=1 (write the properties,
# do not start): README.md, "Settings beyond the benchmark's".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$here/target

fail() { echo "debezium run: $*" >&2; exit 2; }

[ -f "$target/.complete" ] || fail "not built: run $here/build.sh first"

password_set=${DBZ_DB_PASSWORD+set}
DBZ_DB_HOST=${DBZ_DB_HOST:-}
DBZ_DB_PORT=${DBZ_DB_PORT:-}
DBZ_DB_USER=${DBZ_DB_USER:-}
DBZ_DB_PASSWORD=${DBZ_DB_PASSWORD-}
DBZ_DB_NAME=${DBZ_DB_NAME:-}
DBZ_TABLE=${DBZ_TABLE:-outbox_events}
DBZ_KAFKA_BOOTSTRAP=${DBZ_KAFKA_BOOTSTRAP:-}
DBZ_TOPIC=${DBZ_TOPIC:-}
DBZ_STATE_DIR=${DBZ_STATE_DIR:-}
DBZ_SERVER_ID=${DBZ_SERVER_ID:-}
DBZ_SNAPSHOT_MODE=${DBZ_SNAPSHOT_MODE:-no_data}
DBZ_REST_PORT=${DBZ_REST_PORT:-18083}
DBZ_SNAPSHOT_LOCKING_MODE=${DBZ_SNAPSHOT_LOCKING_MODE:-minimal}
DBZ_POLL_INTERVAL_MS=${DBZ_POLL_INTERVAL_MS:-}
DBZ_STOP_TIMEOUT=${DBZ_STOP_TIMEOUT:-30}
DBZ_CONNECTOR_NAME=${DBZ_CONNECTOR_NAME:-herald-outbox}
DBZ_CONNECTOR_EXTRA=${DBZ_CONNECTOR_EXTRA:-}
DBZ_EXTRA_CONNECTORS=${DBZ_EXTRA_CONNECTORS:-}
DBZ_DRY_RUN=${DBZ_DRY_RUN:-}

# Every bad variable at once, each by name.
errors=()
need() { [ -n "${!1}" ] || errors+=("$1 is required"); }
need DBZ_DB_HOST; need DBZ_DB_USER; need DBZ_DB_NAME; need DBZ_KAFKA_BOOTSTRAP
need DBZ_STATE_DIR; need DBZ_DB_PORT; need DBZ_SERVER_ID
[ -n "$password_set" ] || errors+=("DBZ_DB_PASSWORD is required (may be empty)")
port_ok() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }
[ -z "$DBZ_DB_PORT" ] || port_ok "$DBZ_DB_PORT" || errors+=("DBZ_DB_PORT must be a port number, not '$DBZ_DB_PORT'")
port_ok "$DBZ_REST_PORT" || errors+=("DBZ_REST_PORT must be a port number, not '$DBZ_REST_PORT'")
[ -z "$DBZ_SERVER_ID" ] || { [[ $DBZ_SERVER_ID =~ ^[0-9]+$ ]] && [ "$DBZ_SERVER_ID" -ge 1 ] && [ "$DBZ_SERVER_ID" -le 4294967295 ]; } \
  || errors+=("DBZ_SERVER_ID must be an integer in 1..4294967295, not '$DBZ_SERVER_ID'")
ident='^[A-Za-z0-9_]+$'
[ -z "$DBZ_DB_NAME" ] || [[ $DBZ_DB_NAME =~ $ident ]] || errors+=("DBZ_DB_NAME must match $ident, not '$DBZ_DB_NAME'")
[[ $DBZ_TABLE =~ $ident ]] || errors+=("DBZ_TABLE must match $ident, not '$DBZ_TABLE'")
[ -z "$DBZ_TOPIC" ] || [[ $DBZ_TOPIC =~ ^[A-Za-z0-9._-]{1,249}$ ]] || errors+=("DBZ_TOPIC must be a Kafka topic name ([A-Za-z0-9._-], at most 249), not '$DBZ_TOPIC'")
case $DBZ_SNAPSHOT_MODE in
  no_data|initial|when_needed|never|initial_only|recovery|schema_only|schema_only_recovery) ;;
  *) errors+=("DBZ_SNAPSHOT_MODE must be a Debezium snapshot.mode (no_data, initial, when_needed, ...), not '$DBZ_SNAPSHOT_MODE'") ;;
esac
[ -z "$DBZ_POLL_INTERVAL_MS" ] || { [[ $DBZ_POLL_INTERVAL_MS =~ ^[0-9]+$ ]] && [ "$DBZ_POLL_INTERVAL_MS" -ge 1 ]; } \
  || errors+=("DBZ_POLL_INTERVAL_MS must be a positive number of milliseconds, not '$DBZ_POLL_INTERVAL_MS'")
{ [[ $DBZ_STOP_TIMEOUT =~ ^[0-9]+$ ]] && [ "$DBZ_STOP_TIMEOUT" -ge 1 ]; } \
  || errors+=("DBZ_STOP_TIMEOUT must be a positive number of seconds, not '$DBZ_STOP_TIMEOUT'")
case $DBZ_SNAPSHOT_LOCKING_MODE in
  minimal|extended|none) ;;
  *) errors+=("DBZ_SNAPSHOT_LOCKING_MODE must be minimal, extended or none, not '$DBZ_SNAPSHOT_LOCKING_MODE'") ;;
esac
case $DBZ_DRY_RUN in
  ''|0|1) ;;
  *) errors+=("DBZ_DRY_RUN must be 1 (write the properties only) or 0, not '$DBZ_DRY_RUN'") ;;
esac
# Connector names reach the REST API's paths (the watcher): a safe subset
# of what Connect accepts.
name_re='^[A-Za-z0-9._-]{1,200}$'
[[ $DBZ_CONNECTOR_NAME =~ $name_re ]] || errors+=("DBZ_CONNECTOR_NAME must match $name_re, not '$DBZ_CONNECTOR_NAME'")
# DBZ_CONNECTOR_EXTRA: key=value lines appended to connector.properties, so
# each wins over run.sh's line of the same key (the last of a key wins in a
# Java properties file). One line, one property: no continuation lines.
replacement_extra=""
if [ -n "$DBZ_CONNECTOR_EXTRA" ]; then
  if [ ! -f "$DBZ_CONNECTOR_EXTRA" ] || [ ! -r "$DBZ_CONNECTOR_EXTRA" ]; then
    errors+=("DBZ_CONNECTOR_EXTRA must be a readable file, not '$DBZ_CONNECTOR_EXTRA'")
  else
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
      n=$((n + 1))
      [[ $line =~ ^[[:space:]]*$ || $line =~ ^[[:space:]]*[#!] ]] && continue
      if ! [[ $line =~ ^[A-Za-z0-9_.-]+= ]]; then
        errors+=("DBZ_CONNECTOR_EXTRA: line $n of $DBZ_CONNECTOR_EXTRA is not key=value (key of [A-Za-z0-9_.-], no space before =): '$line'")
        continue
      fi
      key=${line%%=*}
      if [[ $line =~ (\\+)$ ]] && [ $((${#BASH_REMATCH[1]} % 2)) = 1 ]; then
        errors+=("DBZ_CONNECTOR_EXTRA: line $n of $DBZ_CONNECTOR_EXTRA ends in a lone backslash (a continuation line): write \\\\ for a backslash")
      fi
      case $key in
        name) errors+=("DBZ_CONNECTOR_EXTRA: line $n of $DBZ_CONNECTOR_EXTRA sets name: use DBZ_CONNECTOR_NAME (the watcher polls the connector by it)") ;;
        transforms.outbox.route.topic.replacement) replacement_extra=1 ;;
      esac
    done <"$DBZ_CONNECTOR_EXTRA"
  fi
fi
# DBZ_TOPIC, or the extra file's route.topic.replacement: one of them names
# the topic(s).
if [ -n "$replacement_extra" ] && [ -n "$DBZ_TOPIC" ]; then
  errors+=("DBZ_TOPIC and DBZ_CONNECTOR_EXTRA's transforms.outbox.route.topic.replacement both name the topic: set one")
elif [ -z "$replacement_extra" ] && [ -z "$DBZ_TOPIC" ]; then
  errors+=("DBZ_TOPIC is required (or transforms.outbox.route.topic.replacement in DBZ_CONNECTOR_EXTRA)")
fi
# DBZ_EXTRA_CONNECTORS: complete connector properties files (':'-separated
# paths), each with its own name= line, created after the main connector.
extra_files=() names=("$DBZ_CONNECTOR_NAME")
if [ -n "$DBZ_EXTRA_CONNECTORS" ]; then
  IFS=: read -r -a extra_paths <<<"$DBZ_EXTRA_CONNECTORS"
  for f in "${extra_paths[@]}"; do
    if [ -z "$f" ]; then
      errors+=("DBZ_EXTRA_CONNECTORS: an empty path in '$DBZ_EXTRA_CONNECTORS' (paths are separated by ':')")
      continue
    fi
    if [ ! -f "$f" ] || [ ! -r "$f" ]; then
      errors+=("DBZ_EXTRA_CONNECTORS: '$f' is not a readable file")
      continue
    fi
    extra_name=$(sed -n 's/^name=//p' "$f" | tail -n 1)
    if ! [[ $extra_name =~ $name_re ]]; then
      errors+=("DBZ_EXTRA_CONNECTORS: '$f' needs a line name=<connector name> matching $name_re (a properties file, not JSON), not '$extra_name'")
      continue
    fi
    for have in "${names[@]}"; do
      if [ "$have" = "$extra_name" ]; then
        errors+=("DBZ_EXTRA_CONNECTORS: '$f' names connector $extra_name, which another connector of this worker has")
        continue 2
      fi
    done
    names+=("$extra_name")
    extra_files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
  done
fi
if [ ${#errors[@]} -gt 0 ]; then
  printf 'debezium run: %s\n' "${errors[@]}" >&2
  exit 2
fi
# Connect's producer waits for a missing topic forever (Connect sets
# max.block.ms and delivery.timeout.ms to their maxima), logging a warning
# per retry: refuse to start instead, where kcat can tell.
if [ -n "$DBZ_TOPIC" ] && command -v kcat >/dev/null; then
  meta=$(kcat -b "$DBZ_KAFKA_BOOTSTRAP" -L -t "$DBZ_TOPIC" -m 10 2>&1 || true)
  if [[ $meta == *"Unknown topic or partition"* ]]; then
    fail "DBZ_TOPIC: topic $DBZ_TOPIC does not exist on $DBZ_KAFKA_BOOTSTRAP (create it first)"
  fi
fi
mkdir -p "$DBZ_STATE_DIR" || fail "DBZ_STATE_DIR: cannot create $DBZ_STATE_DIR"
state=$(cd "$DBZ_STATE_DIR" && pwd)
connector=$DBZ_CONNECTOR_NAME

# Java properties files: a backslash escapes, so double every one.
prop() { printf '%s=%s\n' "$1" "${2//\\/\\\\}"; }

umask 077
{
  echo "# Written by bench/debezium/run.sh at every start; edits are overwritten."
  prop bootstrap.servers "$DBZ_KAFKA_BOOTSTRAP"
  # Key = aggregate_id and value = payload, each a string: StringConverter
  # writes them as their UTF-8 bytes. Headers (the event id) use Connect's
  # default SimpleHeaderConverter, which writes a string as its bytes.
  prop key.converter org.apache.kafka.connect.storage.StringConverter
  prop value.converter org.apache.kafka.connect.storage.StringConverter
  prop offset.storage.file.filename "$state/connect.offsets"
  # Kafka Connect's documented default (WorkerConfig): offsets reach the
  # file every minute and at a clean stop, so a crash (not a SIGTERM)
  # publishes again at most the last minute's events.
  prop offset.flush.interval.ms 60000
  prop plugin.path "$target/plugins"
  prop listeners "http://127.0.0.1:$DBZ_REST_PORT"
  # The same guarantee herald's relay asks of Kafka.
  prop producer.acks all
  prop producer.enable.idempotence true
} >"$state/worker.properties"

{
  echo "# Written by bench/debezium/run.sh at every start; edits are overwritten."
  prop name "$connector"
  prop connector.class io.debezium.connector.mariadb.MariaDbConnector
  prop tasks.max 1
  prop database.hostname "$DBZ_DB_HOST"
  prop database.port "$DBZ_DB_PORT"
  prop database.user "$DBZ_DB_USER"
  prop database.password "$DBZ_DB_PASSWORD"
  prop database.server.id "$DBZ_SERVER_ID"
  # The logical name: the key of the saved offsets, so it must not change
  # between runs of one state directory.
  prop topic.prefix "herald_dbz_$DBZ_DB_NAME"
  prop database.include.list "$DBZ_DB_NAME"
  prop table.include.list "$DBZ_DB_NAME.$DBZ_TABLE"
  prop snapshot.mode "$DBZ_SNAPSHOT_MODE"
  # minimal (Debezium's default) takes FLUSH TABLES ... WITH READ LOCK while
  # it reads the schema: the user needs RELOAD (grant.sh).
  prop snapshot.locking.mode "$DBZ_SNAPSHOT_LOCKING_MODE"
  # Only the outbox table's events reach Kafka: no schema-change topic.
  prop include.schema.changes false
  prop schema.history.internal io.debezium.storage.file.history.FileSchemaHistory
  prop schema.history.internal.file.filename "$state/schema-history.dat"
  # The shared server holds many databases: keep the DDL of the captured
  # table only, not of every table on the server.
  prop schema.history.internal.store.only.captured.databases.ddl true
  prop schema.history.internal.store.only.captured.tables.ddl true
  # Debezium hands Connect a batch when max.batch.size (2048) events are
  # queued or poll.interval.ms (500) has passed: at a low rate an event can
  # wait up to that long. Unset = Debezium's default; the tuned setting.
  if [ -n "$DBZ_POLL_INTERVAL_MS" ]; then prop poll.interval.ms "$DBZ_POLL_INTERVAL_MS"; fi
  prop transforms outbox
  prop transforms.outbox.type io.debezium.transforms.outbox.EventRouter
  prop transforms.outbox.table.field.event.id id
  prop transforms.outbox.table.field.event.key aggregate_id
  prop transforms.outbox.table.field.event.payload payload
  prop transforms.outbox.route.by.field aggregate_type
  # A constant replacement: every event, whatever its aggregate_type, goes
  # to DBZ_TOPIC (unless DBZ_CONNECTOR_EXTRA routes them).
  if [ -n "$DBZ_TOPIC" ]; then prop transforms.outbox.route.topic.replacement "$DBZ_TOPIC"; fi
  if [ -n "$DBZ_CONNECTOR_EXTRA" ]; then
    echo "# DBZ_CONNECTOR_EXTRA ($DBZ_CONNECTOR_EXTRA): last, so each of its keys wins."
    cat "$DBZ_CONNECTOR_EXTRA"
    echo
  fi
} >"$state/connector.properties"

if [ "$DBZ_DRY_RUN" = 1 ]; then
  echo "$state/connector.properties"
  exit 0
fi

# The watcher, beside the JVM (the exec below keeps this PID), ends with it:
# - Connect standalone keeps running with a FAILED connector or task, so it
#   polls the worker's REST status of every connector (the main one and
#   DBZ_EXTRA_CONNECTORS') and stops the worker when one fails;
# - Connect's shutdown can hang (seen: its shutdown hook waiting forever in
#   RestServer.stop for Jetty's threads after Jetty's own shutdown hook
#   failed), so once the JVM is shutting down (its "connect-shutdown-hook"
#   thread exists) it gets DBZ_STOP_TIMEOUT seconds, then SIGKILL.
worker_pid=$$
(
  stopping_since="" failed=""
  while kill -0 "$worker_pid" 2>/dev/null; do
    sleep 2
    if grep -qs '^connect-shutdow' /proc/"$worker_pid"/task/*/comm; then
      stopping_since=${stopping_since:-$SECONDS}
      if [ $((SECONDS - stopping_since)) -ge "$DBZ_STOP_TIMEOUT" ]; then
        echo "debezium run: the worker (pid $worker_pid) did not stop within ${DBZ_STOP_TIMEOUT}s of its shutdown; SIGKILL" >&2
        kill -KILL "$worker_pid" 2>/dev/null
        exit 0
      fi
      continue
    fi
    [ -z "$failed" ] || continue
    for name in "${names[@]}"; do
      status=$(curl -fsS --max-time 5 "http://127.0.0.1:$DBZ_REST_PORT/connectors/$name/status" 2>/dev/null) || continue
      if [[ $status == *'"state":"FAILED"'* ]]; then
        failed=1
        echo "debezium run: connector $name FAILED; stopping the worker (pid $worker_pid):" >&2
        if command -v jq >/dev/null; then
          jq -r '.connector, (.tasks[]) | select(.state=="FAILED") | (.trace // .state)' <<<"$status" >&2 || echo "$status" >&2
        else
          echo "$status" >&2
        fi
        kill -TERM "$worker_pid" 2>/dev/null
        break
      fi
    done
  done
) </dev/null &

# Heap as Kafka's bin/connect-standalone.sh sets it.
exec java -Xms256M -Xmx2G \
  -Dlog4j2.configurationFile="$here/log4j2.xml" \
  -cp "$target/lib/*" \
  org.apache.kafka.connect.cli.ConnectStandalone "$state/worker.properties" "$state/connector.properties" ${extra_files[@]+"${extra_files[@]}"}
