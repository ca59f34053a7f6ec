# The runtimes of the writer snippets and the Python consumer
# (docs/writers.md, docs/consumers.md), which tests run against the stack:
# the Node drivers (npm), the JDBC drivers (Maven Central) and a Python
# virtualenv with confluent-kafka (PyPI) that also sees Debian's psycopg2
# and PyMySQL. Each goes into the cache (HERALD_CACHE_DIR, default
# ~/.cache/herald: writers/node, writers/java, writers/venv), again only
# when its manifest changed. PHP, Python's drivers, Node, npm and the JDK
# come from apt (up.sh, install_packages). Sourced by up.sh after lib.sh.

WRITERS_CACHE=$CACHE_DIR/writers

# runtime_part DIR MANIFEST INSTALL: runs INSTALL DIR MANIFEST unless DIR
# holds a stamp of MANIFEST's current content.
runtime_part() {
  local dir=$1 manifest=$2 install=$3 stamp
  stamp=$(sha256sum "$manifest" | cut -c1-16)
  [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] && return 0
  rm -rf "$dir"
  mkdir -p "$dir"
  "$install" "$dir" "$manifest"
  echo "$stamp" >"$dir/.stamp"
}

install_node_drivers() {
  local dir=$1 manifest=$2
  step "install the node writer drivers (npm) into $dir"
  cp "$manifest" "$(dirname "$manifest")/package-lock.json" "$dir/"
  npm ci --prefix "$dir" --no-audit --no-fund --silent >"$dir/npm.log" 2>&1 \
    || fail "npm ci (log: $dir/npm.log)"
}

install_jdbc_drivers() {
  local dir=$1 manifest=$2
  step "resolve the JDBC drivers from Maven Central into $dir"
  mvn -q -B -Dstyle.color=never -f "$manifest" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$dir/jars" || fail "maven could not resolve the JDBC drivers"
}

install_consumer_venv() {
  local dir=$1 manifest=$2
  step "make the python consumer's virtualenv in $dir (confluent-kafka from PyPI)"
  # Debian's python, whatever a pyenv shim puts first on the PATH.
  /usr/bin/python3 -m venv --system-site-packages "$dir/venv" >"$dir/venv.log" 2>&1 \
    || fail "python3 -m venv (log: $dir/venv.log)"
  "$dir/venv/bin/pip" install -q --disable-pip-version-check -r "$manifest" >>"$dir/venv.log" 2>&1 \
    || fail "pip install -r $manifest (log: $dir/venv.log)"
}

install_writer_runtimes() {
  runtime_part "$WRITERS_CACHE/node" "$REPO_DIR/examples/writers/node/package.json" install_node_drivers
  runtime_part "$WRITERS_CACHE/java" "$REPO_DIR/examples/writers/java/pom.xml" install_jdbc_drivers
  runtime_part "$WRITERS_CACHE/python" "$REPO_DIR/examples/consumers/python/requirements.txt" install_consumer_venv
}
