#!/usr/bin/env bash
# smoke.sh: proves run.sh on the local stack (make up), in about two minutes:
# a scratch database with herald's migrations and a topic of 3 partitions;
# run.sh until a probe event reaches the topic; three events checked
# field by field (key = aggregate_id, header id = the event id, value = the
# payload as stored); SIGTERM (a clean stop); 100 events written while it
# is stopped; run.sh again on the same state directory: every event on the
# topic exactly once, each aggregate's events in order. Cleans up its
# database, topic and state directory, also on failure.
#
# Needs: build.sh and grant.sh run before, Go (herald migrate, topics
# create), the mariadb client, kcat, and the stack's Kafka jars (to delete
# the topic).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bootstrap=${DBZ_KAFKA_BOOTSTRAP:-127.0.0.1:9092}
suffix=$(date +%s)$RANDOM
db=herald_dbz_smoke_$suffix
topic=herald_dbz_smoke_$suffix
state=$(mktemp -d)
log=$state/run.log
herald=(go run "$repo/cmd/herald")
sql() { mariadb -h127.0.0.1 -P3306 -uherald -pherald -N "$@"; }
say() { echo "debezium smoke: $*" >&2; }
fail() { say "FAILED: $*"; [ -f "$log" ] && { say "last lines of run.sh's log:"; tail -n 25 "$log" >&2; }; exit 1; }

worker=""
cleanup() {
  if [ -n "$worker" ] && kill -0 "$worker" 2>/dev/null; then
    kill -TERM "$worker"
    wait "$worker" 2>/dev/null || true
  fi
  sql -e "DROP DATABASE IF EXISTS $db" || say "could not drop database $db"
  # shellcheck source=../../stack/lib.sh
  if (source "$repo/stack/lib.sh" && java -cp "$(kafka_jars_dir)/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$bootstrap" --delete --topic "$topic") >/dev/null 2>&1; then :; else
    say "could not delete topic $topic"
  fi
  rm -rf "$state"
}
trap cleanup EXIT

[ -f "$here/target/.complete" ] || fail "not built: run $here/build.sh"
sql -e "CREATE DATABASE $db"
(cd "$repo" && "${herald[@]}" migrate up --database-url "herald:herald@tcp(127.0.0.1:3306)/$db?parseTime=true&loc=UTC") >/dev/null \
  || fail "herald migrate up"
(cd "$repo" && "${herald[@]}" topics create "$topic" --partitions 3) >/dev/null || fail "herald topics create"

insert() { # insert ID AGGREGATE SEQ PAYLOAD
  sql "$db" -e "INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, occurred_at, next_attempt_at)
    VALUES ('$1', 'order', '$2', $3, 'order.created', 1, '$4', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))"
}
records() { kcat -b "$bootstrap" -C -t "$topic" -e -q -f '%k|%h|%s\n' 2>/dev/null; }
count() { records | wc -l; }
start() {
  DBZ_DB_HOST=127.0.0.1 DBZ_DB_PORT=3306 DBZ_DB_USER=herald DBZ_DB_PASSWORD=herald DBZ_DB_NAME="$db" \
    DBZ_KAFKA_BOOTSTRAP="$bootstrap" DBZ_TOPIC="$topic" DBZ_STATE_DIR="$state/dbz" DBZ_SERVER_ID=$((900000 + RANDOM)) DBZ_REST_PORT=$((18100 + RANDOM % 100)) \
    "$here/run.sh" >>"$log" 2>&1 &
  worker=$!
}
stop() {
  kill -TERM "$worker"
  local rc=0
  wait "$worker" || rc=$?
  worker=""
  [ "$rc" = 143 ] || fail "run.sh exited $rc after SIGTERM, not 143"
  grep -q 'Kafka Connect stopped' "$log" || fail "no clean stop in the log"
}
wait_count() { # wait_count N SECONDS
  local deadline=$((SECONDS + $2))
  until [ "$(count)" -ge "$1" ]; do
    [ -n "$worker" ] && ! kill -0 "$worker" 2>/dev/null && fail "run.sh exited while waiting for $1 records"
    [ $SECONDS -lt "$deadline" ] || fail "fewer than $1 records after $2 s ($(count))"
    sleep 1
  done
}

say "database $db, topic $topic: starting run.sh"
start
# Readiness as the harness detects it: a probe event appears on the topic.
probes=0
deadline=$((SECONDS + 150))
until [ "$(count)" -gt 0 ]; do
  kill -0 "$worker" 2>/dev/null || fail "run.sh exited before it was ready"
  [ $SECONDS -lt "$deadline" ] || fail "no probe event on the topic after 150 s"
  probes=$((probes + 1))
  insert "$(cat /proc/sys/kernel/random/uuid)" probe "$probes" '{"probe":true}'
  sleep 2
done
say "ready after $SECONDS s"
base=$(count)

id1=$(cat /proc/sys/kernel/random/uuid) id2=$(cat /proc/sys/kernel/random/uuid) id3=$(cat /proc/sys/kernel/random/uuid)
insert "$id1" order-1 1 '{"order_id":1, "total_amount":"19.98"}'
insert "$id2" order-2 1 '{"order_id":2}'
insert "$id3" order-1 2 '{"order_id":1,"status":"paid"}'
wait_count $((base + 3)) 60
for want in "order-1|$id1|{\"order_id\":1, \"total_amount\":\"19.98\"}" "order-2|$id2|{\"order_id\":2}" "order-1|$id3|{\"order_id\":1,\"status\":\"paid\"}"; do
  key=${want%%|*} rest=${want#*|}
  id=${rest%%|*} value=${rest#*|}
  line=$(records | grep -F ",id=$id|") || line=$(records | grep -F "|id=$id|") || fail "event $id is not on the topic"
  [ "${line%%|*}" = "$key" ] || fail "event $id: key '${line%%|*}', want '$key'"
  [ "${line##*|}" = "$value" ] || fail "event $id: value '${line##*|}', want '$value' (the payload as stored)"
done
say "three events: key, header id and payload as stored"

stop
say "SIGTERM: clean stop (143)"
for i in $(seq 1 100); do
  insert "$(cat /proc/sys/kernel/random/uuid)" "agg-$((i % 10))" $((10 + i)) "{\"n\":$i}"
done
start
wait_count $((base + 103)) 150
sleep 3
ids=$(records | sed 's/.*id=\([0-9a-f-]*\)|.*/\1/' | sort)
dups=$(uniq -d <<<"$ids" | wc -l)
[ "$dups" = 0 ] || fail "$dups event ids twice on the topic: sent again after the restart"
missing=$(sql "$db" -e "SELECT id FROM outbox_events WHERE aggregate_id <> 'probe'" | sort | comm -23 - <(echo "$ids") | wc -l)
[ "$missing" = 0 ] || fail "$missing events are not on the topic"
ordered=$(records | grep '^agg-' | sed -E 's/^(agg-[0-9]+)\|.*\{"n":([0-9]+)\}$/\1 \2/' \
  | awk '{ if (($1 in last) && $2 <= last[$1]) bad++; last[$1] = $2 } END { print bad + 0 }')
[ "$ordered" = 0 ] || fail "$ordered events out of order within their aggregate"
stop
say "restart on the same state: resumed, 100 new events once each, in order per aggregate"
say "ok"
