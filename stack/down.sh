#!/usr/bin/env bash
# down.sh: stop every process stack/up.sh started (by pid file); data stays.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# Brokers first, the controller (node 100) last: a broker shuts down cleanly
# only while the controller answers.
for id in $(kafka_running_nodes | sort -n); do
  "$REPO_DIR/stack/node.sh" stop "kafka-$id"
done
"$REPO_DIR/stack/node.sh" stop mariadb
"$REPO_DIR/stack/node.sh" stop postgres
step_name=""
echo "herald stack is down (data kept in $STACK_DIR)"
