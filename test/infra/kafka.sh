#!/usr/bin/env bash
# Starts a real Apache Kafka broker (KRaft, combined broker+controller) on free loopback ports,
# without Docker: the jars come from Maven Central through pom.xml beside this script.
#
#   test/infra/kafka.sh start [DIR]   -> prints KAFKA_BROKERS=127.0.0.1:PORT once the broker answers
#   test/infra/kafka.sh stop  [DIR]
#
# DIR (default .cache/infra/kafka-run) holds the log dirs, config, pid and broker log.
# Jars are cached in .cache/infra/kafka-libs so reruns start in seconds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${CDP_INFRA_CACHE:-$root/.cache/infra}"
libs="$cache/kafka-libs"
cmd="${1:-start}"
run="${2:-$cache/kafka-run}"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'; }

fetch() {
  if [ -f "$libs/.complete" ]; then return; fi
  command -v mvn >/dev/null || { echo "kafka.sh: mvn is required to fetch Kafka from Maven Central" >&2; exit 1; }
  mkdir -p "$libs"
  echo "kafka.sh: fetching Apache Kafka jars from Maven Central into $libs" >&2
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$libs" -DincludeScope=runtime >&2
  touch "$libs/.complete"
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
  rm -rf "$run"; mkdir -p "$run/logs"
  local port cport
  port="$(free_port)"; cport="$(free_port)"
  cat > "$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$run/data
num.partitions=4
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.retention.hours=-1
PROPS
  # Kafka 4.x logs through log4j2.
  cat > "$run/log4j2.properties" <<L4J
appender.file.type=File
appender.file.name=file
appender.file.fileName=$run/logs/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=file
logger.kafka.name=kafka.server
logger.kafka.level=INFO
L4J
  local jopts=(-Xms256m -Xmx1g -XX:+UseG1GC -Dlog4j2.configurationFile="$run/log4j2.properties")
  local cid
  cid="$(java "${jopts[@]}" -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)"
  java "${jopts[@]}" -cp "$libs/*" kafka.tools.StorageTool format -t "$cid" -c "$run/server.properties" >"$run/logs/format.log" 2>&1 \
    || { cat "$run/logs/format.log" >&2; exit 1; }
  nohup java "${jopts[@]}" -cp "$libs/*" kafka.Kafka "$run/server.properties" >"$run/logs/stdout.log" 2>&1 &
  echo $! > "$run/pid"
  for _ in $(seq 1 300); do
    if ! kill -0 "$(cat "$run/pid")" 2>/dev/null; then
      echo "kafka.sh: broker exited during start-up:" >&2; tail -n 40 "$run/logs/stdout.log" "$run/logs/server.log" >&2 2>/dev/null || true; exit 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port" > "$run/port"
      echo "KAFKA_BROKERS=127.0.0.1:$port"
      return
    fi
    sleep 0.2
  done
  echo "kafka.sh: broker did not start within 60 s; see $run/logs" >&2; exit 1
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  fetch) fetch ;;
  *) echo "usage: kafka.sh start|stop|fetch [DIR]" >&2; exit 2 ;;
esac
