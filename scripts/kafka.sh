#!/usr/bin/env bash
# Runs a real single-node Apache Kafka 4.4.0 broker (combined KRaft
# broker+controller on 127.0.0.1) from the Maven Central jars, for the tests
# of eventlog/kafkalog and the interop suite. No release tarball is needed.
#
#   scripts/kafka.sh fetch          resolve kafka_2.13:4.4.0 and its runtime
#                                   dependencies into the cache (idempotent)
#   scripts/kafka.sh start <dir>    format (first time) and start a broker whose
#                                   config, data, log and pid live in <dir>; prints
#                                   RLMM_KAFKA_BOOTSTRAP=127.0.0.1:PORT on stdout
#   scripts/kafka.sh stop <dir>     SIGTERM, then SIGKILL after a timeout
#   scripts/kafka.sh restart <dir>  stop, then start on the same ports and data
#   scripts/kafka.sh status <dir>   exit 0 when the broker answers
#
# Environment: RLMM_CACHE (default ~/.cache/rlmm) holds the jars;
# KAFKA_HEAP (default 512m); KAFKA_START_TIMEOUT (default 90s).
set -euo pipefail

KAFKA_VERSION=4.4.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${RLMM_CACHE:-$HOME/.cache/rlmm}"
LIBS="$CACHE/kafka-$KAFKA_VERSION/libs"
PROBE="$CACHE/kafka-$KAFKA_VERSION/probe"
HEAP="${KAFKA_HEAP:-512m}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90s}"
STOP_TIMEOUT_S=30

log() { echo "kafka.sh: $*" >&2; }
die() { log "$*"; exit 1; }

fetch() {
	if [[ -f "$LIBS/.complete" ]]; then
		return 0
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	log "resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION from Maven Central into $LIBS"
	local tmp="$LIBS.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! mvn -B -q -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "maven could not resolve the Kafka jars (see its output above)"
	fi
	# The class names the script relies on; fail here, not at start.
	local listing
	listing="$(unzip -l "$tmp/kafka_2.13-$KAFKA_VERSION.jar")"
	for class in kafka/Kafka.class kafka/tools/StorageTool.class; do
		grep -q " $class\$" <<<"$listing" ||
			die "$class not found in kafka_2.13-$KAFKA_VERSION.jar"
	done
	rm -rf "$LIBS"
	mv "$tmp" "$LIBS"
	touch "$LIBS/.complete"
}

build_probe() {
	mkdir -p "$(dirname "$PROBE")"
	(cd "$ROOT" && go build -o "$PROBE" ./scripts/kafka/probe)
}

# prop FILE KEY prints the value of KEY in a properties file.
prop() { sed -n "s/^$2=//p" "$1" | head -n1; }

running_pid() {
	local dir="$1"
	[[ -f "$dir/pid" ]] || return 1
	local pid
	pid="$(cat "$dir/pid")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	# A stale pid file may name a pid the system gave to another process.
	grep -q 'kafka\.Kafka' "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

configure() {
	local dir="$1"
	local ports port cport cid
	mapfile -t ports < <("$PROBE" ports 2)
	port="${ports[0]}"
	cport="${ports[1]}"
	cid="$("$PROBE" cluster-id)"
	mkdir -p "$dir/data"
	cat >"$dir/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=F
appender.file.fileName=$dir/broker.log
appender.file.append=true
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=F
logger.server.name=kafka.server.KafkaRaftServer
logger.server.level=INFO
logger.broker.name=kafka.server.BrokerServer
logger.broker.level=INFO
EOF
	cat >"$dir/server.properties" <<EOF
# Single-node combined KRaft broker for rlmm tests (written by scripts/kafka.sh).
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
log.cleaner.dedupe.buffer.size=33554432
EOF
	echo "$cid" >"$dir/cluster-id"
	java -Xmx256m -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$LIBS/*" \
		kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
		{ cat "$dir/format.log" >&2; die "formatting $dir/data failed"; }
}

start() {
	local dir="$1"
	fetch
	build_probe
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if pid="$(running_pid "$dir")"; then
		die "a broker is already running in $dir (pid $pid)"
	fi
	if [[ ! -f "$dir/server.properties" ]]; then
		configure "$dir"
	fi
	local port
	port="$(prop "$dir/server.properties" listeners | sed -n 's/^PLAINTEXT:\/\/127\.0\.0\.1:\([0-9]*\),.*/\1/p')"
	[[ -n "$port" ]] || die "no PLAINTEXT listener in $dir/server.properties"
	# setsid: the broker outlives this script and is stopped only by `stop`.
	setsid nohup java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$dir/log4j2.properties" -Dkafka.logs.dir="$dir" \
		-cp "$LIBS/*" kafka.Kafka "$dir/server.properties" >>"$dir/broker.out" 2>&1 </dev/null &
	echo $! >"$dir/pid"
	if ! "$PROBE" wait "127.0.0.1:$port" "$START_TIMEOUT"; then
		log "broker did not become ready; last lines of $dir/broker.log and broker.out:"
		tail -n 30 "$dir/broker.log" "$dir/broker.out" >&2 || true
		stop "$dir" || true
		exit 1
	fi
	echo "RLMM_KAFKA_BOOTSTRAP=127.0.0.1:$port"
}

stop() {
	local dir="$1" pid
	if ! pid="$(running_pid "$dir")"; then
		rm -f "$dir/pid"
		log "no broker running in $dir"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local waited=0
	while kill -0 "$pid" 2>/dev/null; do
		if ((waited >= STOP_TIMEOUT_S * 10)); then
			log "broker pid $pid ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$dir/pid"
}

status() {
	local dir="$1" port
	build_probe
	[[ -f "$dir/server.properties" ]] || die "$dir has no server.properties"
	port="$(prop "$dir/server.properties" listeners | sed -n 's/^PLAINTEXT:\/\/127\.0\.0\.1:\([0-9]*\),.*/\1/p')"
	"$PROBE" wait "127.0.0.1:$port" 5s
	echo "RLMM_KAFKA_BOOTSTRAP=127.0.0.1:$port"
}

cmd="${1:-}"
case "$cmd" in
fetch) fetch ;;
start | stop | restart | status)
	[[ $# -eq 2 ]] || die "usage: $0 $cmd <dir>"
	case "$cmd" in
	start) start "$2" ;;
	stop) stop "$2" ;;
	restart)
		stop "$2"
		start "$2"
		;;
	status) status "$2" ;;
	esac
	;;
*) die "usage: $0 fetch | start <dir> | stop <dir> | restart <dir> | status <dir>" ;;
esac
