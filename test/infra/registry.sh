#!/usr/bin/env bash
# Starts a real Confluent-compatible schema registry (Apicurio Registry 3.x, in-memory storage)
# without Docker: the release archive comes from Maven Central.
#
#   test/infra/registry.sh start [DIR]  -> prints SCHEMA_REGISTRY_URL=http://127.0.0.1:PORT/apis/ccompat/v7
#   test/infra/registry.sh stop  [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${CDP_INFRA_CACHE:-$root/.cache/infra}"
version="${APICURIO_VERSION:-3.3.3}"
dist="$cache/apicurio-$version"
cmd="${1:-start}"
run="${2:-$cache/registry-run}"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }

fetch() {
  if [ -f "$dist/.complete" ]; then return; fi
  command -v mvn >/dev/null || { echo "registry.sh: mvn is required to fetch Apicurio Registry from Maven Central" >&2; exit 1; }
  mkdir -p "$dist"
  echo "registry.sh: fetching io.apicurio:apicurio-registry-app:$version:tar.gz:all from Maven Central" >&2
  mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$version:tar.gz:all" -DoutputDirectory="$dist" >&2
  tar -xzf "$dist/apicurio-registry-app-$version-all.tar.gz" -C "$dist"
  rm -f "$dist/apicurio-registry-app-$version-all.tar.gz"
  touch "$dist/.complete"
}

# Apicurio 3.3 is built for Java 21+: use the newest JDK of at least 21 that the machine has.
pick_java() {
  local best="" bestv=0 j v
  for j in "${JAVA21_HOME:+$JAVA21_HOME/bin/java}" /usr/lib/jvm/*/bin/java "$(command -v java || true)"; do
    [ -n "$j" ] && [ -x "$j" ] || continue
    v="$("$j" -XshowSettings:properties -version 2>&1 | sed -n 's/.*java.specification.version = \([0-9]*\).*/\1/p' | head -n1 || true)"
    [ -n "$v" ] || continue
    if [ "$v" -ge 21 ] && [ "$v" -gt "$bestv" ]; then best="$j"; bestv="$v"; fi
  done
  [ -n "$best" ] || { echo "registry.sh: Apicurio Registry $version needs Java 21 or newer; none found (set JAVA21_HOME)" >&2; exit 1; }
  echo "$best"
}

stop() {
  if [ -f "$run/pid" ]; then
    pid="$(cat "$run/pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$run/pid"
  fi
}

start() {
  fetch
  stop
  rm -rf "$run"; mkdir -p "$run"
  local port mport jar
  port="$(free_port)"; mport="$(free_port)"
  jar="$(find "$dist" -name quarkus-run.jar | head -n1)"
  [ -n "$jar" ] || { echo "registry.sh: quarkus-run.jar not found under $dist" >&2; exit 1; }
  # In-memory H2 storage. Apicurio's global default compatibility is NONE; we set BACKWARD per subject.
  local java; java="$(pick_java)"
  nohup "$java" -Xms128m -Xmx768m -Dquarkus.http.port="$port" -Dquarkus.http.host=127.0.0.1 \
    -Dquarkus.management.port="$mport" -Dquarkus.management.host=127.0.0.1 \
    -Dquarkus.log.level=WARN -Dapicurio.rest.deletion.artifact.enabled=true \
    -Dapicurio.rest.deletion.artifact-version.enabled=true \
    -jar "$jar" >"$run/registry.log" 2>&1 &
  echo $! > "$run/pid"
  local url="http://127.0.0.1:$port/apis/ccompat/v7"
  for _ in $(seq 1 300); do
    if ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then
      echo "registry.sh: registry exited during start-up:" >&2; tail -n 40 "$run/registry.log" >&2; exit 1
    fi
    if curl -fsS "$url/subjects" >/dev/null 2>&1; then
      echo "$url" > "$run/url"
      echo "SCHEMA_REGISTRY_URL=$url"
      return
    fi
    sleep 0.2
  done
  echo "registry.sh: registry did not answer within 60 s; see $run/registry.log" >&2; exit 1
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  fetch) fetch ;;
  *) echo "usage: registry.sh start|stop|fetch [DIR]" >&2; exit 2 ;;
esac
