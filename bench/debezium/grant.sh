#!/usr/bin/env bash
# grant.sh: gives the stack's application user the one privilege Debezium's
# connector needs beyond what stack/up.sh grants: RELOAD, for the
# FLUSH TABLES ... WITH READ LOCK its snapshot takes while it reads the
# outbox table's schema at first start (Debezium's documentation lists
# RELOAD among the connector user's privileges, "used only when performing
# snapshots"). REPLICATION SLAVE, BINLOG MONITOR (REPLICATION CLIENT) and
# everything on herald% databases are already there.
# Idempotent. Runs as MariaDB's root over the stack's unix socket.
#
#   DBZ_ROOT_SOCKET  default $HERALD_STACK_DIR/mariadb/mariadb.sock
#                    (HERALD_STACK_DIR defaults to /var/tmp/herald-stack)
#   DBZ_GRANT_USER   default herald (both herald@127.0.0.1 and herald@localhost)
set -euo pipefail
socket=${DBZ_ROOT_SOCKET:-${HERALD_STACK_DIR:-/var/tmp/herald-stack}/mariadb/mariadb.sock}
user=${DBZ_GRANT_USER:-herald}
[[ $user =~ ^[A-Za-z0-9_]+$ ]] || { echo "debezium grant: DBZ_GRANT_USER must match ^[A-Za-z0-9_]+\$, not '$user'" >&2; exit 2; }
[ -S "$socket" ] || { echo "debezium grant: no MariaDB socket at $socket (DBZ_ROOT_SOCKET)" >&2; exit 1; }
mariadb --socket="$socket" -uroot -e "GRANT RELOAD ON *.* TO '$user'@'127.0.0.1', '$user'@'localhost'" \
  || { echo "debezium grant: GRANT RELOAD to $user failed" >&2; exit 1; }
echo "debezium grant: RELOAD ON *.* granted to '$user'@'127.0.0.1' and '$user'@'localhost'" >&2
