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
# A cluster of N combined KRaft nodes (broker+controller, N voters) for the
# fault tests (faulttest/); node i lives in <dir>/node-i:
#   scripts/kafka.sh cluster-start <dir> [N]  format (first time) and start N
#                                   nodes (default 3); prints RLMM_KAFKA_BOOTSTRAP
#                                   (every node's PLAINTEXT address, comma-separated)
#   scripts/kafka.sh cluster-stop <dir>       stop every node
#   scripts/kafka.sh node-kill <dir> <i>      SIGKILL node i (kill -9)
#   scripts/kafka.sh node-pause <dir> <i>     SIGSTOP node i
#   scripts/kafka.sh node-resume <dir> <i>    SIGCONT node i
#   scripts/kafka.sh node-start <dir> <i>     start node i again on its data
# With KAFKA_SECURITY=sasl_ssl at the first cluster-start, every node also has
# a SASL_SSL listener (SCRAM-SHA-512 users created at format time) and the
# StandardAuthorizer (see make_security, configure_security); cluster-start
# then also prints RLMM_KAFKA_SASL_BOOTSTRAP and RLMM_KAFKA_SECURITY_DIR.
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

# ---- a cluster of combined nodes (cluster-start and the node-* commands) ----

# node_dir DIR I prints the directory of node I of the cluster in DIR.
node_dir() { echo "$1/node-$2"; }

# cluster_nodes DIR prints the node numbers of the cluster in DIR.
cluster_nodes() {
	local d
	for d in "$1"/node-*; do
		[[ -f "$d/server.properties" ]] && echo "${d##*/node-}"
	done | sort -n
}

# listener_port FILE NAME prints the port of listener NAME in a server.properties.
listener_port() {
	prop "$1" listeners | tr ',' '\n' | sed -n "s/^$2:\/\/127\.0\.0\.1:\([0-9]*\)\$/\1/p"
}

# configure_cluster DIR N writes node-1..node-N of a cluster of combined
# nodes (every node a controller voter) and formats each with one cluster id.
configure_cluster() {
	local dir="$1" n="$2" i ports cid voters="" secure="" rf
	mapfile -t ports < <("$PROBE" ports $((3 * n)))
	cid="$("$PROBE" cluster-id)"
	rf=$((n < 3 ? n : 3))
	for ((i = 1; i <= n; i++)); do
		voters+="${voters:+,}$i@127.0.0.1:${ports[$((3 * i - 2))]}"
	done
	if [[ "${KAFKA_SECURITY:-}" == sasl_ssl ]]; then
		secure=1
		make_security "$dir/security"
	fi
	for ((i = 1; i <= n; i++)); do
		local nd port cport sport listeners advertised
		nd="$(node_dir "$dir" "$i")"
		port="${ports[$((3 * i - 3))]}"
		cport="${ports[$((3 * i - 2))]}"
		sport="${ports[$((3 * i - 1))]}"
		listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		advertised="PLAINTEXT://127.0.0.1:$port"
		if [[ -n "$secure" ]]; then
			listeners+=",SASL_SSL://127.0.0.1:$sport"
			advertised+=",SASL_SSL://127.0.0.1:$sport"
		fi
		mkdir -p "$nd/data"
		write_log4j "$nd"
		cat >"$nd/server.properties" <<EOF
# Node $i of a $n-node combined KRaft cluster for rlmm's fault tests (written by scripts/kafka.sh).
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=$nd/data
num.partitions=1
default.replication.factor=$rf
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.replica.fetchers=1
log.cleaner.dedupe.buffer.size=33554432
EOF
		[[ -z "$secure" ]] || configure_security "$nd/server.properties" "$dir/security"
		echo "$cid" >"$nd/cluster-id"
		format_node "$nd" "$cid" ${secure:+"$dir/security"}
		# The keystore password, and the SCRAM users' salted keys.
		[[ -z "$secure" ]] || chmod 600 "$nd/server.properties" "$nd/format.log"
	done
}

# write_log4j DIR writes a node's log4j2 configuration (log file in DIR).
write_log4j() {
	cat >"$1/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=F
appender.file.fileName=$1/broker.log
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
}

# format_node DIR CID [SECURITY_DIR] formats a node's data directory; with
# SECURITY_DIR, the SCRAM users of its users.properties are created at
# format time (StorageTool --add-scram), so they exist at the first start.
format_node() {
	local nd="$1" cid="$2" sec="${3:-}" args=() user pass
	if [[ -n "$sec" ]]; then
		while IFS='=' read -r user pass; do
			[[ -n "$user" ]] && args+=(--add-scram "SCRAM-SHA-512=[name=$user,password=$pass]")
		done <"$sec/users.properties"
	fi
	# The arguments hold passwords: StorageTool gets them, no log does.
	java -Xmx256m -Dlog4j2.configurationFile="$nd/log4j2.properties" -cp "$LIBS/*" \
		kafka.tools.StorageTool format -t "$cid" -c "$nd/server.properties" "${args[@]}" >"$nd/format.log" 2>&1 ||
		{ cat "$nd/format.log" >&2; die "formatting $nd/data failed"; }
}

# launch_node DIR starts the broker of a configured node directory in the
# background (setsid: it outlives this script) and records its pid.
launch_node() {
	local nd="$1"
	setsid nohup java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$nd/log4j2.properties" -Dkafka.logs.dir="$nd" \
		-cp "$LIBS/*" kafka.Kafka "$nd/server.properties" >>"$nd/broker.out" 2>&1 </dev/null &
	echo $! >"$nd/pid"
}

# wait_node DIR waits until the node's PLAINTEXT listener answers.
wait_node() {
	local nd="$1" port
	port="$(listener_port "$nd/server.properties" PLAINTEXT)"
	if ! "$PROBE" wait "127.0.0.1:$port" "$START_TIMEOUT"; then
		log "node in $nd did not become ready; last lines of its broker.log and broker.out:"
		tail -n 30 "$nd/broker.log" "$nd/broker.out" >&2 || true
		return 1
	fi
}

cluster_start() {
	local dir="$1" n="${2:-3}" i nd pid
	[[ "$n" =~ ^[1-9]$ ]] || die "cluster-start: the node count must be 1..9, got '$n'"
	fetch
	build_probe
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if [[ -z "$(cluster_nodes "$dir")" ]]; then
		configure_cluster "$dir" "$n"
	fi
	for i in $(cluster_nodes "$dir"); do
		nd="$(node_dir "$dir" "$i")"
		if pid="$(running_pid "$nd")"; then
			log "node $i already running (pid $pid)"
			continue
		fi
		launch_node "$nd"
	done
	for i in $(cluster_nodes "$dir"); do
		wait_node "$(node_dir "$dir" "$i")" || {
			cluster_stop "$dir"
			exit 1
		}
	done
	cluster_env "$dir"
}

# cluster_env DIR prints the variables the tests read.
cluster_env() {
	local dir="$1" i nd sp plain="" sasl=""
	for i in $(cluster_nodes "$dir"); do
		nd="$(node_dir "$dir" "$i")"
		plain+="${plain:+,}127.0.0.1:$(listener_port "$nd/server.properties" PLAINTEXT)"
		sp="$(listener_port "$nd/server.properties" SASL_SSL)"
		[[ -z "$sp" ]] || sasl+="${sasl:+,}127.0.0.1:$sp"
	done
	echo "RLMM_KAFKA_BOOTSTRAP=$plain"
	if [[ -n "$sasl" ]]; then
		echo "RLMM_KAFKA_SASL_BOOTSTRAP=$sasl"
		echo "RLMM_KAFKA_SECURITY_DIR=$dir/security"
	fi
}

cluster_stop() {
	local dir="$1" i nd pid
	for i in $(cluster_nodes "$dir"); do
		nd="$(node_dir "$dir" "$i")"
		# A paused node cannot act on SIGTERM.
		if pid="$(running_pid "$nd")"; then kill -CONT "$pid" 2>/dev/null || true; fi
		stop "$nd" 2>/dev/null || true
	done
}

# node_signal DIR I SIGNAL sends SIGNAL to node I (after SIGKILL, waits
# until the process is gone).
node_signal() {
	local nd pid
	nd="$(node_dir "$1" "$2")"
	[[ -f "$nd/server.properties" ]] || die "no node $2 in $1"
	pid="$(running_pid "$nd")" || die "node $2 in $1 is not running"
	kill "-$3" "$pid"
	if [[ "$3" == KILL ]]; then
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		rm -f "$nd/pid"
	fi
}

# node_start DIR I starts node I again on its data (after node-kill) and
# waits until it answers.
node_start() {
	local nd pid
	nd="$(node_dir "$1" "$2")"
	[[ -f "$nd/server.properties" ]] || die "no node $2 in $1"
	if pid="$(running_pid "$nd")"; then
		die "node $2 in $1 is already running (pid $pid)"
	fi
	build_probe
	launch_node "$nd"
	wait_node "$nd" || exit 1
}

# ---- security: SASL_SSL with SCRAM-SHA-512 and the StandardAuthorizer ----

# make_security DIR generates, once, what the secure listener needs: a CA and
# a broker certificate for 127.0.0.1 and localhost (openssl), a PKCS#12
# keystore with a random password, and SCRAM users with random passwords in
# users.properties (every file mode 600): admin (a super user), rlmm (given
# every ACL by the tests), rlmm-noread and rlmm-nowrite (everything but READ,
# resp. WRITE, on the metadata topic).
make_security() {
	local sec="$1"
	[[ -f "$sec/.complete" ]] && return 0
	command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
	rm -rf "$sec"
	mkdir -p "$sec"
	chmod 700 "$sec"
	(
		set -e
		umask 077
		cd "$sec"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 \
			-subj "/CN=rlmm test CA" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=localhost" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >broker.ext
		openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.pem \
			-days 30 -extfile broker.ext 2>/dev/null
		openssl rand -hex 16 >keystore.password
		openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
			-out broker.p12 -passout "file:keystore.password"
		for user in admin rlmm rlmm-noread rlmm-nowrite; do
			echo "$user=$(openssl rand -hex 16)"
		done >users.properties
		rm -f broker.csr broker.ext ca.srl
	) || die "generating the TLS material and SCRAM users in $sec failed"
	touch "$sec/.complete"
}

# configure_security FILE SECURITY_DIR appends the SASL_SSL listener and the
# authorizer to a node's server.properties. Inter-broker and controller
# traffic stays on the loopback PLAINTEXT listeners, whose principal
# (User:ANONYMOUS) is therefore a super user beside User:admin; every other
# principal needs ACLs (allow.everyone.if.no.acl.found=false).
configure_security() {
	local file="$1" sec="$2"
	cat >>"$file" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$sec/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$(cat "$sec/keystore.password")
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
allow.everyone.if.no.acl.found=false
EOF
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
cluster-start)
	[[ $# -ge 2 && $# -le 3 ]] || die "usage: $0 cluster-start <dir> [nodes]"
	cluster_start "$2" "${3:-3}"
	;;
cluster-stop)
	[[ $# -eq 2 ]] || die "usage: $0 cluster-stop <dir>"
	cluster_stop "$2"
	;;
node-kill | node-pause | node-resume | node-start)
	[[ $# -eq 3 ]] || die "usage: $0 $cmd <dir> <node>"
	case "$cmd" in
	node-kill) node_signal "$2" "$3" KILL ;;
	node-pause) node_signal "$2" "$3" STOP ;;
	node-resume) node_signal "$2" "$3" CONT ;;
	node-start) node_start "$2" "$3" ;;
	esac
	;;
*) die "usage: $0 fetch | start <dir> | stop <dir> | restart <dir> | status <dir> | cluster-start <dir> [nodes] | cluster-stop <dir> | node-kill|node-pause|node-resume|node-start <dir> <node>" ;;
esac
