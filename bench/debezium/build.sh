#!/usr/bin/env bash
# build.sh: resolves Kafka Connect's runtime and Debezium's MariaDB connector
# (with its Outbox Event Router) from Maven Central into target/:
#   target/lib/                             the worker's classpath
#   target/plugins/debezium-connector-mariadb/ the connector, on plugin.path
# Idempotent: a build of the same pom.xml is kept and found in well under a
# second; a changed pom.xml or a broken build is resolved again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=$here/target
stamp=$target/.complete

fail() { echo "debezium build: $*" >&2; exit 1; }

command -v mvn >/dev/null || fail "mvn is not installed (apt-get install maven)"
command -v java >/dev/null || fail "java is not installed (Java 17 or newer)"

want=$(sha256sum "$here/pom.xml" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

rm -rf "$target"
mkdir -p "$target"
resolve() {
  local profile=$1 dir=$2
  if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" -P "$profile" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir" \
    >"$target/mvn-$profile.log" 2>&1; then
    tail -n 30 "$target/mvn-$profile.log" >&2
    fail "maven could not resolve the $profile jars (log: $target/mvn-$profile.log)"
  fi
}
resolve worker "$target/lib"
resolve connector "$target/plugins/debezium-connector-mariadb"
ls "$target"/lib/connect-runtime-*.jar >/dev/null 2>&1 || fail "connect-runtime is missing from $target/lib"
ls "$target"/plugins/debezium-connector-mariadb/debezium-connector-mariadb-*.jar >/dev/null 2>&1 \
  || fail "debezium-connector-mariadb is missing from $target/plugins"
echo "$want" >"$stamp"
echo "debezium build: jars in $target" >&2
