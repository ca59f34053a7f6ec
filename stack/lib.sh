# Shared by the stack scripts: locations, node layout and small helpers.
# Sourced, not executed.

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK_DIR=${HERALD_STACK_DIR:-/var/tmp/herald-stack}
CACHE_DIR=${HERALD_CACHE_DIR:-$HOME/.cache/herald}
# KAFKA_BROKERS: 1 or 3. Unset means the layout already configured (or 1),
# so `make test` on a running three-broker stack keeps it.
KAFKA_BROKERS=${KAFKA_BROKERS:-$(cat "${HERALD_STACK_DIR:-/var/tmp/herald-stack}/kafka/brokers" 2>/dev/null || echo 1)}

MARIADB_DIR=$STACK_DIR/mariadb
MARIADB_CNF=$MARIADB_DIR/my.cnf
MARIADB_SOCKET=$MARIADB_DIR/mariadb.sock
MARIADB_PIDFILE=$MARIADB_DIR/mariadb.pid
KAFKA_DIR=$STACK_DIR/kafka
# TLS_DIR: the stack's own CA and the certificates it signed (stack/up.sh).
TLS_DIR=$STACK_DIR/tls

# Credentials of the secured listeners and the TLS database users (the
# same users on MariaDB and PostgreSQL). They are a local stack's, written
# in the README; testkit/testenv spells them too.
KAFKA_SASL_USER=herald
KAFKA_SASL_PASSWORD=herald-kafka-secret
MARIADB_TLS_USER=herald_tls
MARIADB_TLS_PASSWORD=herald-tls-secret
MARIADB_X509_USER=herald_x509
MARIADB_X509_PASSWORD=herald-x509-secret

# PostgreSQL: Debian's newest installed server, run from its own data
# directory under the stack dir (no systemd, no Debian cluster).
PG_DIR=$STACK_DIR/postgres
PG_DATA=$PG_DIR/data
PG_CONF=$PG_DIR/postgresql.conf
PG_LOG=$PG_DIR/log/postgresql.log
pg_bin() {
  local v
  v=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)
  [ -n "$v" ] && echo "/usr/lib/postgresql/$v/bin"
}
# pg_as_postgres CMD...: PostgreSQL's tools refuse to run as root.
pg_as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Kafka layout. One broker: a combined broker+controller node (id 1) on 9092,
# its controller listener on 19092. Three brokers: a dedicated controller
# (id 100, port 19090) and broker-only nodes 1..3 on 9092..9094, so that any
# broker can be stopped without losing the controller quorum.
KAFKA_CONTROLLER_ID=100
KAFKA_CONTROLLER_PORT=19090

step_name=""
# step NAME: announce a phase; on failure the trap names it.
step() {
  step_name=$1
  printf '==> %s\n' "$1"
}
fail() {
  printf 'herald stack: step "%s" failed: %s\n' "$step_name" "$*" >&2
  step_name=""
  exit 1
}
trap 'rc=$?; [ $rc -ne 0 ] && [ -n "$step_name" ] && printf "herald stack: step \"%s\" failed (exit %d)\n" "$step_name" "$rc" >&2' EXIT

# alive PIDFILE: true when the pid file names a running process.
alive() {
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# stop_pidfile PIDFILE NAME: SIGTERM, wait up to 60 s, then SIGKILL.
stop_pidfile() {
  local pidfile=$1 name=$2 pid i
  if ! alive "$pidfile"; then
    rm -f "$pidfile"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill -TERM "$pid"
  for i in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$name (pid $pid) did not stop in 60 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

kafka_jars_dir() {
  local key
  key=$(sha256sum "$REPO_DIR/stack/kafka/pom.xml" | cut -c1-12)
  echo "$CACHE_DIR/kafka-$key/libs"
}

# kafka_nodes: node ids of the configured layout, controller first.
kafka_nodes() {
  if [ "$KAFKA_BROKERS" = 1 ]; then
    echo 1
  else
    echo "$KAFKA_CONTROLLER_ID $(seq -s ' ' 1 "$KAFKA_BROKERS")"
  fi
}

# kafka_running_nodes: node ids that have a live pid file, whatever the layout.
kafka_running_nodes() {
  local d
  for d in "$KAFKA_DIR"/node-*; do
    [ -d "$d" ] || continue
    alive "$d/kafka.pid" && echo "${d##*/node-}"
  done
  return 0
}

# Each broker has three client listeners: PLAINTEXT (no authentication,
# a super user), SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN over TLS)
# and SSL (TLS with a client certificate). Broker N listens on 9091+N,
# 9191+N and 9291+N.
kafka_broker_port() { echo $((9091 + $1)); }
kafka_sasl_port() { echo $((9191 + $1)); }
kafka_ssl_port() { echo $((9291 + $1)); }

# kafka_bootstrap [PORT_FUNCTION]: the brokers' addresses on one listener
# (default: plaintext).
kafka_bootstrap() {
  local i out="" port_of=${1:-kafka_broker_port}
  for i in $(seq 1 "$KAFKA_BROKERS"); do
    out="$out${out:+,}127.0.0.1:$("$port_of" "$i")"
  done
  echo "$out"
}
