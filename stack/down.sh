#!/usr/bin/env bash
# down.sh: stop every process stack/up.sh started (by pid file); data stays.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

for id in $(kafka_running_nodes | sort -rn); do
  "$REPO_DIR/stack/node.sh" stop "kafka-$id"
done
"$REPO_DIR/stack/node.sh" stop mariadb
step_name=""
echo "herald stack is down (data kept in $STACK_DIR)"
