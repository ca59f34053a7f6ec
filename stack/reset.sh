#!/usr/bin/env bash
# reset.sh: stop the stack and wipe its data (databases, binlogs, topics).
# The jar cache ($HERALD_CACHE_DIR) stays, so the next make up is quick.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

"$REPO_DIR/stack/down.sh"
step "wipe $STACK_DIR"
case "$STACK_DIR" in /|"") fail "refusing to wipe '$STACK_DIR'" ;; esac
rm -rf "$STACK_DIR"
step_name=""
echo "herald stack data wiped"
