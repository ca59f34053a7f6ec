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
source "$REPO_DIR/stack/writers.sh"

case "$KAFKA_BROKERS" in 1|3) ;; *) fail "KAFKA_BROKERS must be 1 or 3, not '$KAFKA_BROKERS'" ;; esac

install_packages() {
  local missing=()
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
  command -v mariadb >/dev/null || missing+=(mariadb-client)
  command -v kcat >/dev/null || missing+=(kcat)
  pg_bin >/dev/null || missing+=(postgresql)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v java >/dev/null || missing+=(default-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  [ -d /usr/share/zoneinfo ] || missing+=(tzdata)
  # The writer snippets' and the python consumer's runtimes (stack/writers.sh).
  command -v php >/dev/null || missing+=(php-cli)
  php -m 2>/dev/null | grep -qx pdo_mysql || missing+=(php-mysql)
  php -m 2>/dev/null | grep -qx pdo_pgsql || missing+=(php-pgsql)
  /usr/bin/python3 -c 'import psycopg2' 2>/dev/null || missing+=(python3-psycopg2)
  /usr/bin/python3 -c 'import pymysql' 2>/dev/null || missing+=(python3-pymysql)
  /usr/bin/python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  command -v javac >/dev/null || missing+=(default-jdk-headless)
  # The console's browser tests (chromedp drives Debian's chromium headless).
  command -v chromium >/dev/null || missing+=(chromium)
  [ ${#missing[@]} -eq 0 ] && return 0
  step "install ${missing[*]} (apt)"
  [ "$(id -u)" = 0 ] || fail "installing ${missing[*]} needs root (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || fail "apt-get update"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || fail "apt-get install ${missing[*]}"
}

# issue_cert NAME SUBJECT EXTENDED_KEY_USAGE [SUBJECT_ALT_NAME]: a key and a
# certificate signed by the stack's CA, unless both exist.
issue_cert() {
  local name=$1 subject=$2 eku=$3 san=${4:-}
  [ -s "$TLS_DIR/$name.pem" ] && [ -s "$TLS_DIR/$name.key" ] && return 0
  step "issue the $name certificate ($subject)"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } >"$TLS_DIR/$name.ext"
  openssl req -new -newkey rsa:2048 -nodes -subj "$subject" \
    -keyout "$TLS_DIR/$name.key" -out "$TLS_DIR/$name.csr" 2>>"$TLS_DIR/openssl.log" \
    && openssl x509 -req -sha256 -days 3650 -in "$TLS_DIR/$name.csr" \
      -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -extfile "$TLS_DIR/$name.ext" -out "$TLS_DIR/$name.pem" 2>>"$TLS_DIR/openssl.log" \
    || fail "openssl (log: $TLS_DIR/openssl.log)"
  rm -f "$TLS_DIR/$name.csr" "$TLS_DIR/$name.ext"
  chmod 600 "$TLS_DIR/$name.key"
}

# ensure_tls: the stack's own CA, the Kafka brokers', MariaDB's and
# PostgreSQL's server certificates and a client certificate (CN=herald,
# Kafka principal User:herald), made once with openssl and valid for ten
# years. Without its CA, everything is issued again.
ensure_tls() {
  mkdir -p "$TLS_DIR"
  chmod 755 "$TLS_DIR"
  if [ ! -s "$TLS_DIR/ca.pem" ] || [ ! -s "$TLS_DIR/ca.key" ]; then
    step "create the stack's certificate authority in $TLS_DIR"
    rm -f "$TLS_DIR"/*.pem "$TLS_DIR"/*.key
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -subj "/CN=herald local stack CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.pem" 2>>"$TLS_DIR/openssl.log" \
      || fail "openssl (log: $TLS_DIR/openssl.log)"
    chmod 600 "$TLS_DIR/ca.key"
  fi
  issue_cert kafka "/CN=localhost" serverAuth "DNS:localhost,DNS:kafka.herald.test,IP:127.0.0.1"
  issue_cert mariadb "/CN=localhost" serverAuth "DNS:localhost,IP:127.0.0.1"
  issue_cert postgres "/CN=localhost" serverAuth "DNS:localhost,IP:127.0.0.1"
  issue_cert client "/CN=herald" clientAuth
  # Kafka's PEM key store: the key, then the certificate chain.
  if [ ! -s "$TLS_DIR/kafka-keystore.pem" ] || [ "$TLS_DIR/kafka.pem" -nt "$TLS_DIR/kafka-keystore.pem" ]; then
    cat "$TLS_DIR/kafka.key" "$TLS_DIR/kafka.pem" "$TLS_DIR/ca.pem" >"$TLS_DIR/kafka-keystore.pem"
    chmod 600 "$TLS_DIR/kafka-keystore.pem"
  fi
  chown mysql:mysql "$TLS_DIR/mariadb.key"
  chown postgres:postgres "$TLS_DIR/postgres.key"
}

configure_mariadb() {
  mkdir -p "$MARIADB_DIR/log" "$MARIADB_DIR/binlog"
  sed "s|@STACK_DIR@|$STACK_DIR|g" "$REPO_DIR/stack/mariadb/my.cnf" >"$MARIADB_CNF.new"
  if ! cmp -s "$MARIADB_CNF.new" "$MARIADB_CNF" && alive "$MARIADB_PIDFILE"; then
    # A stack from before a configuration change (TLS, say): restart it.
    step "mariadb configuration changed: restart mariadb"
    "$NODE" stop mariadb
  fi
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
# database each), plus what a binlog relay needs: REPLICATION SLAVE and
# BINLOG MONITOR (REPLICATION CLIENT before 10.5) to stream, PROCESS for
# the stream's watermark (it reads information_schema.innodb_trx), BINLOG
# ADMIN for a minimal row image of the relay's own updates (docs/security.md
# lists each). The same rights for two
# users that must connect over TLS: herald_tls (REQUIRE SSL) and
# herald_x509 (REQUIRE X509: a client certificate signed by the stack's CA).
create_herald_user() {
  step "create database herald and users herald, $MARIADB_TLS_USER, $MARIADB_X509_USER"
  mariadb --socket="$MARIADB_SOCKET" -uroot <<SQL || fail "create users"
CREATE DATABASE IF NOT EXISTS herald CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'herald'@'127.0.0.1' IDENTIFIED BY 'herald';
CREATE USER IF NOT EXISTS 'herald'@'localhost' IDENTIFIED BY 'herald';
CREATE USER IF NOT EXISTS '$MARIADB_TLS_USER'@'127.0.0.1' IDENTIFIED BY '$MARIADB_TLS_PASSWORD' REQUIRE SSL;
CREATE USER IF NOT EXISTS '$MARIADB_X509_USER'@'127.0.0.1' IDENTIFIED BY '$MARIADB_X509_PASSWORD' REQUIRE X509;
GRANT ALL PRIVILEGES ON \`herald%\`.* TO 'herald'@'127.0.0.1', 'herald'@'localhost',
  '$MARIADB_TLS_USER'@'127.0.0.1', '$MARIADB_X509_USER'@'127.0.0.1';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, BINLOG ADMIN, PROCESS ON *.* TO 'herald'@'127.0.0.1', 'herald'@'localhost',
  '$MARIADB_TLS_USER'@'127.0.0.1', '$MARIADB_X509_USER'@'127.0.0.1';
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

# kafka_tool CLASS ARGS...: runs one of Kafka's command-line tools from the
# jars against the plaintext listener (whose principal is a super user).
kafka_tool() {
  local class=$1
  shift
  java -cp "$(kafka_jars_dir)/*" -Dlog4j2.configurationFile="$REPO_DIR/stack/kafka/log4j2-tools.xml" \
    "$class" --bootstrap-server "127.0.0.1:$(kafka_broker_port 1)" "$@" >>"$KAFKA_DIR/tools.log" 2>&1
}

# scram_args: the SCRAM credentials of the SASL user as kafka-storage
# format's arguments, one per line.
scram_args() {
  local mech
  for mech in SCRAM-SHA-512 SCRAM-SHA-256; do
    printf -- '--add-scram\n%s=[name=%s,password=%s]\n' "$mech" "$KAFKA_SASL_USER" "$KAFKA_SASL_PASSWORD"
  done
}

# write_kafka_node_config ID: writes node ID's server.properties.new.
write_kafka_node_config() {
  local id=$1 dir port roles listeners advertised voters
  dir=$KAFKA_DIR/node-$id
  mkdir -p "$dir/data" "$dir/log"
  local rf=1 isr=1
  [ "$KAFKA_BROKERS" = 3 ] && rf=3 isr=2
  if [ "$KAFKA_BROKERS" = 1 ]; then
    roles=broker,controller
    listeners="PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:$(kafka_sasl_port 1),SSL://127.0.0.1:$(kafka_ssl_port 1),CONTROLLER://127.0.0.1:19092"
    advertised="PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:$(kafka_sasl_port 1),SSL://127.0.0.1:$(kafka_ssl_port 1)"
    voters="1@127.0.0.1:19092"
  elif [ "$id" = "$KAFKA_CONTROLLER_ID" ]; then
    roles=controller
    listeners="CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT"
    advertised=""
    voters="$KAFKA_CONTROLLER_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT"
  else
    roles=broker
    port=$(kafka_broker_port "$id")
    listeners="PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$(kafka_sasl_port "$id"),SSL://127.0.0.1:$(kafka_ssl_port "$id")"
    advertised=$listeners
    voters="$KAFKA_CONTROLLER_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT"
  fi
  cat >"$dir/server.properties.new" <<PROPS
# Written by stack/up.sh; edits are overwritten.
process.roles=$roles
node.id=$id
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
listeners=$listeners
${advertised:+advertised.listeners=$advertised}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL
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

# Secured listeners (docs/security.md). SASL_SSL: SCRAM users live in the
# cluster metadata (created at format time, or by up.sh on an older
# stack); PLAIN checks the user_NAME entry below. SSL: a client
# certificate signed by the stack's CA is required, and its CN is the
# principal (CN=herald is User:herald).
sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$KAFKA_SASL_USER="$KAFKA_SASL_PASSWORD";
listener.name.ssl.ssl.client.auth=required
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/kafka-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
ssl.principal.mapping.rules=RULE:^CN=([^,]+).*\$/\$1/,DEFAULT

# ACLs (the standard authorizer of KRaft). The plaintext listener and the
# controllers are unauthenticated (User:ANONYMOUS) and super users, so
# everything that worked before the secured listeners works as it did.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
PROPS
}

# configure_kafka: writes every node's configuration, formats new nodes
# (with the SCRAM users), and stops running nodes whose configuration
# changed so that they start again with it.
configure_kafka() {
  local want have id changed=""
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
  local scram=()
  mapfile -t scram < <(scram_args)
  for id in $(kafka_nodes); do
    write_kafka_node_config "$id"
    local props=$KAFKA_DIR/node-$id/server.properties
    if ! cmp -s "$props.new" "$props" && alive "$KAFKA_DIR/node-$id/kafka.pid"; then
      changed="$id $changed"
    fi
    mv "$props.new" "$props"
    if [ ! -f "$KAFKA_DIR/node-$id/data/meta.properties" ]; then
      step "format kafka node $id storage"
      java -cp "$jars/*" -Dlog4j2.configurationFile="$REPO_DIR/stack/kafka/log4j2.xml" \
        -Dkafka.logs.dir="$KAFKA_DIR/node-$id/log" kafka.tools.StorageTool format \
        -t "$(cat "$KAFKA_DIR/cluster.id")" -c "$props" "${scram[@]}" \
        >"$KAFKA_DIR/node-$id/log/format.log" 2>&1 \
        || fail "kafka-storage format (log: $KAFKA_DIR/node-$id/log/format.log)"
      # Formatted with the SCRAM users: nothing to add once it runs.
      echo "$KAFKA_SASL_USER" >"$KAFKA_DIR/scram-users"
    fi
  done
  # Brokers before the controller (node 100), as down.sh does.
  for id in $(echo "$changed" | tr ' ' '\n' | sort -n); do
    step "kafka node $id configuration changed: restart it"
    "$NODE" stop "kafka-$id"
  done
}

# secure_kafka: on a running cluster, adds what an older stack's metadata
# lacks (the SCRAM users, formatted only into new clusters) and the ACLs.
# Each is done once; a marker file remembers it.
secure_kafka() {
  if [ "$(cat "$KAFKA_DIR/scram-users" 2>/dev/null)" != "$KAFKA_SASL_USER" ]; then
    step "add SCRAM user $KAFKA_SASL_USER to a cluster formatted without it"
    local mech
    for mech in SCRAM-SHA-512 SCRAM-SHA-256; do # one per request, or Kafka refuses
      kafka_tool kafka.admin.ConfigCommand --alter --entity-type users --entity-name "$KAFKA_SASL_USER" \
        --add-config "$mech=[password=$KAFKA_SASL_PASSWORD]" \
        || fail "kafka-configs --alter users (log: $KAFKA_DIR/tools.log)"
    done
    echo "$KAFKA_SASL_USER" >"$KAFKA_DIR/scram-users"
  fi
  local acls_version=1
  if [ "$(cat "$KAFKA_DIR/acls" 2>/dev/null)" != "$acls_version" ]; then
    # User:herald (SASL or the client certificate CN=herald) may use only
    # topics, groups and transactional ids whose names start with "herald".
    step "grant User:$KAFKA_SASL_USER its ACLs (prefix herald)"
    kafka_tool org.apache.kafka.tools.AclCommand --add --allow-principal "User:$KAFKA_SASL_USER" \
      --operation All --resource-pattern-type prefixed \
      --topic herald --group herald --transactional-id herald \
      || fail "kafka-acls --add (log: $KAFKA_DIR/tools.log)"
    echo "$acls_version" >"$KAFKA_DIR/acls"
  fi
}

start=$(date +%s)
install_packages
ensure_tls
configure_mariadb
"$NODE" start mariadb
create_herald_user
load_time_zones
up_postgres
resolve_kafka_jars
install_writer_runtimes
configure_kafka
for id in $(kafka_nodes); do "$NODE" start "kafka-$id"; done
secure_kafka
step_name=""

cat <<INFO
herald stack is up ($(( $(date +%s) - start )) s)
  MariaDB  127.0.0.1:3306  user herald / herald, database herald
           HERALD_MYSQL_DSN default: herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC
           TLS users: $MARIADB_TLS_USER / $MARIADB_TLS_PASSWORD (REQUIRE SSL),
                      $MARIADB_X509_USER / $MARIADB_X509_PASSWORD (REQUIRE X509, client.pem)
           log: $MARIADB_DIR/log/error.log   binlog: $MARIADB_DIR/binlog
  PostgreSQL 127.0.0.1:5432  role herald / herald, database herald
           HERALD_DATABASE_URL for it: postgres://herald:herald@127.0.0.1:5432/herald?sslmode=disable
           TLS roles: $MARIADB_TLS_USER / $MARIADB_TLS_PASSWORD (hostssl; sslmode=verify-full&sslrootcert=$TLS_DIR/ca.pem),
                      $MARIADB_X509_USER (client certificate CN=herald: &sslcert=$TLS_DIR/client.pem&sslkey=$TLS_DIR/client.key)
           log: $PG_LOG
  Kafka    $(kafka_bootstrap)  ($KAFKA_BROKERS broker(s), KRaft; plaintext, super user)
           SASL_SSL $(kafka_bootstrap kafka_sasl_port)  $KAFKA_SASL_USER / $KAFKA_SASL_PASSWORD (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN)
           SSL      $(kafka_bootstrap kafka_ssl_port)  client certificate $TLS_DIR/client.pem (User:$KAFKA_SASL_USER)
           logs: $KAFKA_DIR/node-*/log/server.log
  TLS      CA $TLS_DIR/ca.pem; client certificate $TLS_DIR/client.pem, key $TLS_DIR/client.key
INFO
