# PostgreSQL's part of stack/up.sh: configuration, data directory, the
# herald role and database. Sourced by up.sh after lib.sh.

configure_postgres() {
  local bin
  bin=$(pg_bin) || fail "no PostgreSQL server in /usr/lib/postgresql (package postgresql)"
  mkdir -p "$PG_DIR/log"
  sed "s|@STACK_DIR@|$STACK_DIR|g" "$REPO_DIR/stack/postgres/postgresql.conf" >"$PG_CONF.new"
  mv "$PG_CONF.new" "$PG_CONF"
  cp "$REPO_DIR/stack/postgres/pg_hba.conf" "$PG_DIR/pg_hba.conf"
  chown -R postgres:postgres "$PG_DIR"
  if [ ! -s "$PG_DATA/PG_VERSION" ]; then
    step "initialise postgresql data directory"
    rm -rf "$PG_DATA"
    pg_as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=peer --auth-host=scram-sha-256 >"$PG_DIR/log/initdb.log" 2>&1 \
      || fail "initdb (log: $PG_DIR/log/initdb.log)"
  fi
}

# The application role: owns database herald and may create the databases
# tests use (one each, herald_t_*).
create_postgres_role() {
  step "create postgresql role herald and database herald"
  local psql
  psql=(pg_as_postgres "$(pg_bin)/psql" -h "$PG_DIR" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt)
  "${psql[@]}" <<'SQL' >/dev/null || fail "create role herald"
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald') THEN
    CREATE ROLE herald LOGIN CREATEDB PASSWORD 'herald';
  END IF;
END $$;
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

up_postgres() {
  stop_debian_clusters
  configure_postgres
  "$NODE" start postgres
  create_postgres_role
}
