# PostgreSQL's part of stack/up.sh: configuration, data directory, the
# herald role and database. Sourced by up.sh after lib.sh.

# configure_postgres writes the server's configuration (postgresql.conf,
# pg_hba.conf, and pg_ident.conf into the data directory, created first if
# need be) and sets pg_config_changed when a file differs from what the
# server was started or last reloaded with.
pg_config_changed=""
configure_postgres() {
  local bin
  bin=$(pg_bin) || fail "no PostgreSQL server in /usr/lib/postgresql (package postgresql)"
  mkdir -p "$PG_DIR/log"
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    step "initialise postgresql data directory"
    rm -rf "$PG_DATA"
    mkdir -p "$PG_DATA"
    chown -R postgres:postgres "$PG_DIR"
    pg_as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=peer --auth-host=scram-sha-256 >"$PG_DIR/log/initdb.log" 2>&1 \
      || fail "initdb (log: $PG_DIR/log/initdb.log)"
  fi
  sed "s|@STACK_DIR@|$STACK_DIR|g" "$REPO_DIR/stack/postgres/postgresql.conf" >"$PG_CONF.new"
  local file
  for file in "$PG_CONF:$PG_CONF.new" "$PG_DIR/pg_hba.conf:$REPO_DIR/stack/postgres/pg_hba.conf" \
    "$PG_DATA/pg_ident.conf:$REPO_DIR/stack/postgres/pg_ident.conf"; do
    if ! cmp -s "${file#*:}" "${file%%:*}"; then
      pg_config_changed=1
      cp "${file#*:}" "${file%%:*}"
    fi
  done
  rm -f "$PG_CONF.new"
  chown -R postgres:postgres "$PG_DIR"
}

# The application role: owns database herald and may create the databases
# tests use (one each, herald_t_*). The TLS roles (pg_hba.conf) are members
# of it, so they use what it creates. It has the REPLICATION attribute for
# `herald relay --source wal` (a logical replication connection, and the
# slot it creates; attributes are not inherited, so the TLS roles stream
# only if given it too).
create_postgres_role() {
  step "create postgresql roles herald, $MARIADB_TLS_USER, $MARIADB_X509_USER and database herald"
  local psql
  psql=(pg_as_postgres "$(pg_bin)/psql" -h "$PG_DIR" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt
    -v tls_user="$MARIADB_TLS_USER" -v tls_password="$MARIADB_TLS_PASSWORD" -v x509_user="$MARIADB_X509_USER")
  "${psql[@]}" <<'SQL' >/dev/null || fail "create roles"
SELECT 'CREATE ROLE herald LOGIN CREATEDB REPLICATION PASSWORD ''herald'''
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald') \gexec
SELECT 'ALTER ROLE herald REPLICATION'
  WHERE EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald' AND NOT rolreplication) \gexec
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE herald', :'tls_user', :'tls_password')
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'tls_user') \gexec
SELECT format('CREATE ROLE %I LOGIN IN ROLE herald', :'x509_user')
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'x509_user') \gexec
SQL
  if [ -z "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'herald'")" ]; then
    "${psql[@]}" -c "CREATE DATABASE herald OWNER herald" >/dev/null || fail "create database herald"
  fi
}

# stop_debian_clusters: installing Debian's package creates a cluster of
# its own ("main", port 5432) and may start it through its init script; the
# stack runs its own data directory on that port instead, so Debian's is
# stopped and set not to start by itself.
stop_debian_clusters() {
  command -v pg_lsclusters >/dev/null || return 0
  local ver name port status rest
  while read -r ver name port status rest; do
    [ -f "/etc/postgresql/$ver/$name/start.conf" ] || continue
    if [ "$status" = online ] || [ "$status" = "online,recovery" ]; then
      step "stop Debian's own postgresql cluster $ver/$name (the stack runs its own)"
      pg_ctlcluster "$ver" "$name" stop || fail "pg_ctlcluster $ver $name stop"
    fi
    grep -qx manual "/etc/postgresql/$ver/$name/start.conf" || echo manual >"/etc/postgresql/$ver/$name/start.conf"
  done < <(pg_lsclusters --no-header 2>/dev/null)
}

# up_postgres: a running server whose configuration changed reloads it
# (TLS and the authentication rules need no restart). A setting only a
# restart applies (max_replication_slots, max_wal_senders) is named with
# what applies it: restarting a shared server is the operator's call.
up_postgres() {
  stop_debian_clusters
  configure_postgres
  if [ -n "$pg_config_changed" ] && "$NODE" status postgres >/dev/null 2>&1; then
    step "postgresql configuration changed: reload it"
    pg_as_postgres "$(pg_bin)/pg_ctl" -D "$PG_DATA" reload >/dev/null || fail "pg_ctl reload (log: $PG_LOG)"
  fi
  "$NODE" start postgres
  create_postgres_role
  local pending
  pending=$(pg_as_postgres "$(pg_bin)/psql" -h "$PG_DIR" -U postgres -d postgres -qAt \
    -c "SELECT string_agg(name, ', ') FROM pg_settings WHERE pending_restart" 2>/dev/null || true)
  if [ -n "$pending" ]; then
    step "postgresql: $pending changed; a restart applies it (stack/node.sh stop postgres, then make up)"
  fi
}
