#!/usr/bin/env bash
# Runs real Apache Kafka brokers (KRaft, on 127.0.0.1) from the Maven Central
# jars, for the tests of eventlog/kafkalog, the interop suite and the broker
# tests (test/broker/). No release tarball is needed.
#
#   scripts/kafka.sh fetch                resolve kafka_2.13:$KAFKA_VERSION (and kafka-storage)
#                                         with their runtime dependencies into the cache; with
#                                         KAFKA_TIERED=1 also kafka-storage:$KAFKA_VERSION:jar:test
#                                         (LocalTieredStorage), or for KAFKA_RSM=fixture build the
#                                         test RSM. Idempotent.
#   scripts/kafka.sh start <dir> [node]   the first time: write the cluster's settings (from the
#                                         environment below) into <dir>/cluster.env, configure and
#                                         format every node; then start every node (or one) and wait
#                                         until it answers; prints RLMM_KAFKA_BOOTSTRAP=host:port[,...]
#                                         (every node) on stdout, and RLMM_KAFKA_REMOTE_DIR=<dir>/tiered
#                                         when tiered storage is on
#   scripts/kafka.sh stop <dir> [node]    SIGTERM, then SIGKILL after a timeout (every node: the
#                                         broker-only nodes first, then the controllers)
#   scripts/kafka.sh restart <dir> [node] stop, then start on the same ports and data
#   scripts/kafka.sh status <dir> [node]  exit 0 when the node(s) answer; prints the bootstrap line
#   scripts/kafka.sh pid <dir> <node>     the node's broker pid (exit 1 when it is not running)
#   scripts/kafka.sh kill <dir> <node>    SIGKILL the node (kill -9) and wait until it is gone;
#                                         `start <dir> <node>` brings it back on its data
#   scripts/kafka.sh pause <dir> <node>   SIGSTOP the node; resume <dir> <node> sends SIGCONT
#   scripts/kafka.sh plugin-jar           build rlmm's broker plugin, print its jar's path
#   scripts/kafka.sh fixture-rsm-jar      build the test RSM (test/broker/fixture-rsm), print its jar's path
#
# Layout: one node (the default) lives in <dir> itself (server.properties, data/, broker.log,
# pid), as this script always did; with KAFKA_NODES=N node i lives in <dir>/node-i. The
# RSM's root (rsm.config.dir) is <dir>/tiered, shared by every node of the cluster (it is the
# cluster's "remote storage": a new leader reads what the old one copied). `start` prints
# RLMM_KAFKA_RSM=local|fixture with it; LocalTieredStorage keeps a segment's files in
# <root>/kafka-tiered-storage/<topic>-<partition>-<topicId>/, the fixture in
# <root>/rlmm-fixture-rsm/<topic>-<partition>-<topicId>/ (the same file names).
# broker.log has Kafka's "Kafka version: <v>" lines (AppInfoParser at INFO, in
# org.apache.kafka.common.utils up to 4.3 and its internals package from 4.4: the version of the
# jars the broker runs, which the broker tests check). `start` and `restart` reuse a node's
# server.properties as it is: a test may edit it between `stop` and `start` (the migration test
# switches a node's RLMM that way, on the same data).
#
# Cluster settings, read by the first `start` of a <dir> and kept in <dir>/cluster.env (later
# commands on that <dir> use the kept values, whatever the environment says):
#   KAFKA_VERSION [4.4.0]   broker version (any 4.x); tiered storage runs on every one of them, with
#                           the RSM of KAFKA_RSM
#   KAFKA_NODES [1]         number of nodes, each with its own ports, data, log and pid
#   KAFKA_CONTROLLERS [1 when KAFKA_NODES < 3, else 3]
#                           nodes 1..K are combined broker+controller (a K-voter static quorum),
#                           the others broker-only; 3 voters survive the loss of any one node
#   KAFKA_TIERED [0]        1: tiered storage on (remote.log.storage.system.enable, the RSM of
#                           KAFKA_RSM, short task intervals: see tiered_config)
#   KAFKA_RSM [local up to 4.3.x, fixture from 4.4]
#                           with KAFKA_TIERED=1, the remote storage manager: `local` = Kafka's
#                           LocalTieredStorage from kafka-storage:$KAFKA_VERSION:jar:test (served for
#                           4.0.1, 4.1.1, 4.2.1, 4.3.1; not for 4.4.0, and 4.3.1's does not load into a
#                           4.4.0 broker), `fixture` = the project's file-system test RSM
#                           (test/broker/fixture-rsm, built with Maven by this script), `aiven` = Aiven's
#                           tiered-storage-for-apache-kafka v1.0.0 on S3 (see aiven_rsm_settings: the jar
#                           from ../shared/aiven-rsm beside the repository, or KAFKA_AIVEN_RSM_DIR; the
#                           bucket and credentials from KAFKA_AIVEN_S3_*)
#   KAFKA_RLMM [kafka]      with KAFKA_TIERED=1, the RLMM: `kafka` = Kafka's own
#                           TopicBasedRemoteLogMetadataManager, `rlmm` = rlmm's broker plugin (jar from
#                           RLMM_PLUGIN_JAR or scripts/plugin.sh build; rlmm binary from RLMM_BINARY or
#                           built into <dir>/bin/rlmm)
#   KAFKA_RLMM_CLASS, KAFKA_RLMM_CLASS_PATH
#                           override the RLMM class and its class path (any other implementation)
#   KAFKA_EXTRA_CONFIG      lines appended to every node's server.properties (last one wins)
#   KAFKA_SECURITY [none]   sasl_ssl: every broker also gets a SASL_SSL listener (SCRAM-SHA-512
#                           users created at format time, a certificate from a CA made for the
#                           cluster) and the StandardAuthorizer; see make_security and
#                           configure_security. `start` then also prints RLMM_KAFKA_SASL_BOOTSTRAP
#                           and RLMM_KAFKA_SECURITY_DIR (the CA, keys and users.properties)
#                           gssapi: the SASL_SSL listener takes GSSAPI (Kerberos) instead, against the
#                           KDC of KAFKA_KRB5_DIR (scripts/kdc.sh start: krb5.conf, broker.keytab,
#                           realm), asks every client for a certificate from the cluster's CA
#                           (ssl.client.auth=required), and has no authorizer; see configure_gssapi.
#                           `start` prints the same two lines
# Run-time settings (read by every command): RLMM_CACHE [~/.cache/rlmm] holds the jars;
# KAFKA_HEAP [512m]; KAFKA_START_TIMEOUT [90s]; KAFKA_STOP_TIMEOUT [30] seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${RLMM_CACHE:-$HOME/.cache/rlmm}"
PROBE="$CACHE/probe/probe"
HEAP="${KAFKA_HEAP:-512m}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-90s}"
STOP_TIMEOUT_S="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_RLMM_DEFAULT_CLASS=org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager
RSM_CLASS=org.apache.kafka.server.log.remote.storage.LocalTieredStorage
FIXTURE_RSM_CLASS=org.rlmm.fixture.FileSystemRemoteStorageManager
FIXTURE_RSM_DIR="$ROOT/test/broker/fixture-rsm"

log() { echo "kafka.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}

libs_dir() { echo "$CACHE/kafka-$1/libs"; }
rsm_jar() { echo "$CACHE/kafka-$1/rsm/kafka-storage-$1-test.jar"; }

# fetch_libs VERSION: the broker's main jars and their runtime dependencies.
fetch_libs() {
	local version="$1" libs
	libs="$(libs_dir "$version")"
	if [[ -f "$libs/.complete" ]]; then
		return 0
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	log "resolving org.apache.kafka:kafka_2.13:$version from Maven Central into $libs"
	local tmp="$libs.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! mvn -B -q -f "$ROOT/scripts/kafka/pom.xml" dependency:copy-dependencies \
		-Dkafka.version="$version" -DincludeScope=runtime -DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "maven could not resolve the Kafka $version jars (see its output above)"
	fi
	# The class names the script relies on; fail here, not at start.
	local listing
	listing="$(unzip -l "$tmp/kafka_2.13-$version.jar")"
	for class in kafka/Kafka.class kafka/tools/StorageTool.class; do
		grep -q " $class\$" <<<"$listing" ||
			die "$class not found in kafka_2.13-$version.jar"
	done
	rm -rf "$libs"
	mv "$tmp" "$libs"
	touch "$libs/.complete"
}

# fetch_rsm VERSION: kafka-storage's test jar, which holds LocalTieredStorage.
fetch_rsm() {
	local version="$1" jar
	jar="$(rsm_jar "$version")"
	if [[ -f "$jar" ]]; then
		return 0
	fi
	log "resolving org.apache.kafka:kafka-storage:$version:jar:test (LocalTieredStorage) into $(dirname "$jar")"
	local tmp
	tmp="$(dirname "$jar").tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! mvn -B -q -f "$ROOT/scripts/kafka/pom.xml" dependency:copy \
		-Dartifact="org.apache.kafka:kafka-storage:$version:jar:test" -DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "maven could not resolve org.apache.kafka:kafka-storage:$version:jar:test (served for 4.0.1, 4.1.1, 4.2.1, 4.3.1; not for 4.4.0: KAFKA_RSM=fixture)"
	fi
	# The listing goes through a variable, as in fetch_libs: piped into grep -q,
	# unzip can take SIGPIPE when grep stops early, and pipefail calls that a miss.
	local listing
	listing="$(unzip -l "$tmp/kafka-storage-$version-test.jar")"
	grep -q " ${RSM_CLASS//.//}.class\$" <<<"$listing" ||
		die "$RSM_CLASS not found in kafka-storage-$version-test.jar"
	rm -rf "$(dirname "$jar")"
	mv "$tmp" "$(dirname "$jar")"
}

# default_rsm VERSION: the RSM a tiered cluster of VERSION gets without KAFKA_RSM:
# LocalTieredStorage where its test jar is served (4.0 to 4.3), the fixture after.
default_rsm() {
	case "$1" in
	4.[0-3].*) echo local ;;
	*) echo fixture ;;
	esac
}

# fixture_rsm_jar: builds test/broker/fixture-rsm (Maven, skipped when no source
# changed since the jar) and prints the jar's path.
fixture_rsm_jar() {
	local jar="$FIXTURE_RSM_DIR/target/rlmm-fixture-rsm.jar"
	if [[ ! -f "$jar" || -n "$(find "$FIXTURE_RSM_DIR/pom.xml" "$FIXTURE_RSM_DIR/src" -newer "$jar" -print -quit)" ]]; then
		command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
		log "building the test RSM $FIXTURE_RSM_DIR with Maven"
		mvn -B -q -f "$FIXTURE_RSM_DIR/pom.xml" package >&2 || die "building $FIXTURE_RSM_DIR failed"
	fi
	[[ -f "$jar" ]] || die "no $jar after the build"
	echo "$jar"
}

# ---- Aiven's RemoteStorageManager (KAFKA_RSM=aiven) ----
# Aiven's tiered-storage-for-apache-kafka is not on Maven Central: a build of v1.0.0 (core + S3, Apache-2.0)
# lives in ../shared/aiven-rsm beside the repository (KAFKA_AIVEN_RSM_DIR overrides), with the pom that lists
# its runtime dependencies (all on Maven Central), resolved once into the cache like the Kafka jars.
AIVEN_RSM_VERSION=1.0.0
AIVEN_RSM_CLASS=io.aiven.kafka.tieredstorage.RemoteStorageManager

aiven_rsm_dir() { echo "${KAFKA_AIVEN_RSM_DIR:-$ROOT/../shared/aiven-rsm}"; }
aiven_rsm_jar() { echo "$(aiven_rsm_dir)/tiered-storage-for-apache-kafka-s3-$AIVEN_RSM_VERSION.jar"; }
aiven_libs_dir() { echo "$CACHE/aiven-rsm-$AIVEN_RSM_VERSION/libs"; }

# fetch_aiven_rsm: checks the jar is there and resolves its runtime dependencies into aiven_libs_dir.
fetch_aiven_rsm() {
	local jar pom libs
	jar="$(aiven_rsm_jar)"
	pom="$(aiven_rsm_dir)/pom.xml"
	[[ -f "$jar" && -f "$pom" ]] ||
		die "KAFKA_RSM=aiven: no $jar or $pom (Aiven's RSM build, expected in ../shared/aiven-rsm beside the repository, or KAFKA_AIVEN_RSM_DIR)"
	libs="$(aiven_libs_dir)"
	[[ -f "$libs/.complete" ]] && return 0
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	log "resolving the runtime dependencies of Aiven's RSM ($pom) from Maven Central into $libs"
	local tmp="$libs.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >&2; then
		rm -rf "$tmp"
		die "maven could not resolve the dependencies of $pom (see its output above)"
	fi
	rm -rf "$libs"
	mv "$tmp" "$libs"
	touch "$libs/.complete"
}

# aiven_rsm_settings: the RSM lines of server.properties for Aiven's RSM on S3. The bucket must exist;
# KAFKA_AIVEN_S3_ENDPOINT, _BUCKET, _ACCESS_KEY and _SECRET_KEY name it (e.g. scripts/seaweedfs.sh's
# server), KAFKA_AIVEN_PREFIX [rlmm/] is its key.prefix. The RSM returns its custom metadata (remote
# size, object prefix, object key) with every segment, which the RLMM must keep and hand back.
aiven_rsm_settings() {
	local v
	for v in KAFKA_AIVEN_S3_ENDPOINT KAFKA_AIVEN_S3_BUCKET KAFKA_AIVEN_S3_ACCESS_KEY KAFKA_AIVEN_S3_SECRET_KEY; do
		[[ -n "${!v:-}" ]] || die "KAFKA_RSM=aiven needs $v"
	done
	cat <<EOF
# Tiered storage: Aiven's RSM $AIVEN_RSM_VERSION on S3 bucket $KAFKA_AIVEN_S3_BUCKET at $KAFKA_AIVEN_S3_ENDPOINT.
remote.log.storage.manager.class.name=$AIVEN_RSM_CLASS
remote.log.storage.manager.class.path=$(aiven_rsm_jar):$(aiven_libs_dir)/*
rsm.config.storage.backend.class=io.aiven.kafka.tieredstorage.storage.s3.S3Storage
rsm.config.storage.s3.endpoint.url=$KAFKA_AIVEN_S3_ENDPOINT
rsm.config.storage.s3.bucket.name=$KAFKA_AIVEN_S3_BUCKET
rsm.config.storage.s3.region=us-east-1
rsm.config.storage.s3.path.style.access.enabled=true
rsm.config.storage.aws.access.key.id=$KAFKA_AIVEN_S3_ACCESS_KEY
rsm.config.storage.aws.secret.access.key=$KAFKA_AIVEN_S3_SECRET_KEY
rsm.config.chunk.size=4194304
rsm.config.key.prefix=${KAFKA_AIVEN_PREFIX-rlmm/}
rsm.config.custom.metadata.fields.include=REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY
EOF
}

# trace DIR WHAT: appends a UTC timestamp and WHAT to DIR/kafka.sh.trace (where
# a start's seconds go).
trace() { echo "$(date -u +%FT%T.%3N) $2" >>"$1/kafka.sh.trace"; }

# build_probe: builds scripts/kafka/probe once per version of its source (the
# binary is named by a hash of main.go, go.mod and go.sum, so worktrees with
# different versions do not overwrite each other's), and points PROBE at it:
# a start then does not spend a `go build` (1-3 s on a loaded machine) before
# it launches the broker.
build_probe() {
	local sum
	sum="$(cat "$ROOT/scripts/kafka/probe/main.go" "$ROOT/go.mod" "$ROOT/go.sum" | sha256sum | cut -c1-16)"
	PROBE="$CACHE/probe/probe-$sum"
	[[ -x "$PROBE" ]] && return 0
	mkdir -p "$(dirname "$PROBE")"
	(cd "$ROOT" && go build -o "$PROBE.$$" ./scripts/kafka/probe && mv -f "$PROBE.$$" "$PROBE")
}

# prop FILE KEY prints the value of KEY in a properties file.
prop() { sed -n "/^$2=/{s///p;q;}" "$1"; }

# load_cluster DIR: the kept settings of DIR (or the defaults, for a directory
# the script configured before it kept them: a single 4.4.0 node).
load_cluster() {
	local dir="$1"
	C_VERSION=4.4.0 C_NODES=1 C_CONTROLLERS=1 C_TIERED=0 C_SECURITY=none C_KRB5_DIR= C_RSM=
	if [[ -f "$dir/cluster.env" ]]; then
		# shellcheck disable=SC1091 # written by save_cluster
		source "$dir/cluster.env"
	fi
	# A cluster kept before C_RSM existed ran LocalTieredStorage.
	C_RSM="${C_RSM:-local}"
}

# new_cluster DIR: the settings of a new cluster from the environment, kept.
new_cluster() {
	local dir="$1"
	C_VERSION="${KAFKA_VERSION:-4.4.0}"
	C_NODES="${KAFKA_NODES:-1}"
	[[ "$C_NODES" =~ ^[1-9]$ ]] || die "KAFKA_NODES must be 1..9, got '$C_NODES'"
	local defc=1
	((C_NODES >= 3)) && defc=3
	C_CONTROLLERS="${KAFKA_CONTROLLERS:-$defc}"
	[[ "$C_CONTROLLERS" =~ ^[1-9]$ ]] && ((C_CONTROLLERS <= C_NODES)) ||
		die "KAFKA_CONTROLLERS must be 1..KAFKA_NODES ($C_NODES), got '$C_CONTROLLERS'"
	C_TIERED="${KAFKA_TIERED:-0}"
	[[ "$C_TIERED" == 0 || "$C_TIERED" == 1 ]] || die "KAFKA_TIERED must be 0 or 1, got '$C_TIERED'"
	C_RSM="${KAFKA_RSM:-$(default_rsm "$C_VERSION")}"
	[[ "$C_RSM" == local || "$C_RSM" == fixture || "$C_RSM" == aiven ]] ||
		die "KAFKA_RSM must be local, fixture or aiven, got '$C_RSM'"
	C_SECURITY="${KAFKA_SECURITY:-none}"
	[[ "$C_SECURITY" == none || "$C_SECURITY" == sasl_ssl || "$C_SECURITY" == gssapi ]] ||
		die "KAFKA_SECURITY must be none, sasl_ssl or gssapi, got '$C_SECURITY'"
	C_KRB5_DIR=
	if [[ "$C_SECURITY" == gssapi ]]; then
		C_KRB5_DIR="${KAFKA_KRB5_DIR:-}"
		[[ -n "$C_KRB5_DIR" && -f "$C_KRB5_DIR/krb5.conf" && -f "$C_KRB5_DIR/broker.keytab" && -f "$C_KRB5_DIR/realm" ]] ||
			die "KAFKA_SECURITY=gssapi needs KAFKA_KRB5_DIR, a directory of scripts/kdc.sh start (krb5.conf, broker.keytab, realm)"
		C_KRB5_DIR="$(cd "$C_KRB5_DIR" && pwd)"
	fi
	{
		echo "# The cluster's settings, kept by scripts/kafka.sh at its first start."
		echo "C_VERSION=$C_VERSION"
		echo "C_NODES=$C_NODES"
		echo "C_CONTROLLERS=$C_CONTROLLERS"
		echo "C_TIERED=$C_TIERED"
		echo "C_RSM=$C_RSM"
		echo "C_SECURITY=$C_SECURITY"
		if [[ -n "$C_KRB5_DIR" ]]; then
			echo "C_KRB5_DIR=$C_KRB5_DIR"
		fi
	} >"$dir/cluster.env"
}

node_dir() {
	if ((C_NODES == 1)); then
		echo "$1"
	else
		echo "$1/node-$2"
	fi
}

# node_list DIR [NODE]: the node numbers a command acts on.
node_list() {
	if [[ -n "${2:-}" ]]; then
		[[ "$2" =~ ^[0-9]+$ ]] && (($2 >= 1 && $2 <= C_NODES)) || die "node must be 1..$C_NODES, got '$2'"
		echo "$2"
	else
		seq 1 "$C_NODES"
	fi
}

broker_port() {
	prop "$1/server.properties" listeners | sed -n 's/^PLAINTEXT:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p'
}

running_pid() {
	local ndir="$1"
	[[ -f "$ndir/pid" ]] || return 1
	local pid
	pid="$(cat "$ndir/pid")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	# A stale pid file may name a pid the system gave to another process.
	grep -q 'kafka\.Kafka' "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

# plugin_jar: builds rlmm's broker plugin (scripts/plugin.sh build, or Maven
# on plugin/pom.xml before that script exists) and prints the shaded jar's path.
plugin_jar() {
	if [[ -f "$ROOT/scripts/plugin.sh" ]]; then
		bash "$ROOT/scripts/plugin.sh" build >&2 || die "scripts/plugin.sh build failed"
	else
		mvn -B -q -f "$ROOT/plugin/pom.xml" clean package -DskipTests >&2 || die "building plugin/ failed"
	fi
	local jar
	jar="$(find "$ROOT/plugin/target" -maxdepth 1 -name 'rlmm-plugin-*.jar' ! -name 'original-*' ! -name '*-sources.jar' | sort | tail -n1)"
	[[ -n "$jar" ]] || die "no plugin/target/rlmm-plugin-*.jar after the build"
	echo "$jar"
}

# rlmm_settings DIR: the RLMM lines of server.properties (tiered storage only).
rlmm_settings() {
	local dir="$1" mode="${KAFKA_RLMM:-kafka}"
	local class="${KAFKA_RLMM_CLASS:-}" cp="${KAFKA_RLMM_CLASS_PATH:-}"
	case "$mode" in
	kafka)
		class="${class:-$KAFKA_RLMM_DEFAULT_CLASS}"
		;;
	rlmm)
		local jar="${RLMM_PLUGIN_JAR:-}" bin="${RLMM_BINARY:-}"
		if [[ -z "$jar" ]]; then
			jar="$(plugin_jar)"
		fi
		[[ -f "$jar" ]] || die "KAFKA_RLMM=rlmm: plugin jar '$jar' not found"
		if [[ -z "$bin" ]]; then
			bin="$dir/bin/rlmm"
			(cd "$ROOT" && go build -o "$bin" ./cmd/rlmm) || die "go build ./cmd/rlmm failed"
		fi
		[[ -x "$bin" ]] || die "KAFKA_RLMM=rlmm: rlmm binary '$bin' not executable"
		class="${class:-${RLMM_PLUGIN_CLASS:-org.rlmm.plugin.RlmmRemoteLogMetadataManager}}"
		cp="${cp:-$jar}"
		echo "rlmm.config.rlmm.serve.binary=$bin"
		;;
	*) die "KAFKA_RLMM must be kafka or rlmm, got '$mode'" ;;
	esac
	echo "remote.log.metadata.manager.class.name=$class"
	if [[ -n "$cp" ]]; then
		echo "remote.log.metadata.manager.class.path=$cp"
	fi
}

# tiered_config DIR: the tiered-storage lines of every node's server.properties.
tiered_config() {
	local dir="$1" rf=$((C_NODES < 3 ? C_NODES : 3))
	local class="$RSM_CLASS" cp
	cp="$(rsm_jar "$C_VERSION")"
	if [[ "$C_RSM" == fixture ]]; then
		class="$FIXTURE_RSM_CLASS"
		cp="$(fixture_rsm_jar)"
	fi
	if [[ "$C_RSM" == aiven ]]; then
		aiven_rsm_settings
	else
		cat <<EOF
# Tiered storage: $class over $dir/tiered (shared by every node).
remote.log.storage.manager.class.name=$class
remote.log.storage.manager.class.path=$cp
rsm.config.dir=$dir/tiered
rsm.config.delete.on.close=false
EOF
	fi
	cat <<EOF
remote.log.storage.system.enable=true
remote.log.metadata.manager.listener.name=PLAINTEXT
rlmm.config.remote.log.metadata.topic.replication.factor=$rf
rlmm.config.remote.log.metadata.topic.min.isr=1
remote.log.manager.task.interval.ms=100
log.retention.check.interval.ms=100
log.initial.task.delay.ms=100
EOF
	rlmm_settings "$dir"
}

# configure DIR: every node's ports, server.properties and formatted storage.
configure() {
	local dir="$1" n="$C_NODES" k="$C_CONTROLLERS"
	local ports cid voters="" i tiered=""
	local secure="" scram=()
	[[ "$C_SECURITY" == none ]] || secure=1
	# Two ports per node (broker, controller), and with security a SASL_SSL
	# port per node after them.
	mapfile -t ports < <("$PROBE" ports $((secure ? 3 * n : 2 * n)))
	if [[ -n "$secure" ]]; then
		make_security "$dir/security"
		if [[ "$C_SECURITY" == sasl_ssl ]]; then
			mapfile -t scram < <(scram_args "$dir/security")
		fi
	fi
	cid="$("$PROBE" cluster-id)"
	echo "$cid" >"$dir/cluster-id"
	for ((i = 1; i <= k; i++)); do
		voters+="${voters:+,}$i@127.0.0.1:${ports[2 * i - 1]}"
	done
	if [[ "$C_TIERED" == 1 ]]; then
		mkdir -p "$dir/tiered"
		tiered="$(tiered_config "$dir")"
	fi
	for ((i = 1; i <= n; i++)); do
		local ndir port="${ports[2 * i - 2]}" cport="${ports[2 * i - 1]}" roles listeners
		ndir="$(node_dir "$dir" "$i")"
		mkdir -p "$ndir/data"
		if ((i <= k)); then
			roles=broker,controller
			listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		else
			roles=broker
			listeners="PLAINTEXT://127.0.0.1:$port"
		fi
		cat >"$ndir/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=F
appender.file.fileName=$ndir/broker.log
appender.file.append=true
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=F
logger.server.name=kafka.server.KafkaRaftServer
logger.server.level=INFO
logger.broker.name=kafka.server.BrokerServer
logger.broker.level=INFO
logger.rlmmplugin.name=org.rlmm.plugin
logger.rlmmplugin.level=INFO
logger.appinfo.name=org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level=INFO
logger.appinfointernals.name=org.apache.kafka.common.utils.internals.AppInfoParser
logger.appinfointernals.level=INFO
EOF
		cat >"$ndir/server.properties" <<EOF
# Node $i of $n of a KRaft cluster for rlmm tests (written by scripts/kafka.sh).
process.roles=$roles
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$ndir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
log.cleaner.dedupe.buffer.size=33554432
EOF
		if [[ -n "$tiered" ]]; then
			echo "$tiered" >>"$ndir/server.properties"
		fi
		if [[ "$C_SECURITY" == sasl_ssl ]]; then
			configure_security "$ndir/server.properties" "$dir/security" "${ports[2 * n + i - 1]}"
		elif [[ "$C_SECURITY" == gssapi ]]; then
			configure_gssapi "$ndir/server.properties" "$dir/security" "${ports[2 * n + i - 1]}"
		fi
		if [[ -n "${KAFKA_EXTRA_CONFIG:-}" ]]; then
			printf '# KAFKA_EXTRA_CONFIG\n%s\n' "$KAFKA_EXTRA_CONFIG" >>"$ndir/server.properties"
		fi
		java -Xmx256m -Dlog4j2.configurationFile="$ndir/log4j2.properties" -cp "$(libs_dir "$C_VERSION")/*" \
			kafka.tools.StorageTool format -t "$cid" -c "$ndir/server.properties" ${scram[@]+"${scram[@]}"} >"$ndir/format.log" 2>&1 ||
			{
				cat "$ndir/format.log" >&2
				die "formatting $ndir/data failed"
			}
		# The keystore password, and the SCRAM users' salted keys.
		[[ -z "$secure" ]] || chmod 600 "$ndir/server.properties" "$ndir/format.log"
	done
}

fetch_for_cluster() {
	fetch_libs "$C_VERSION"
	if [[ "$C_TIERED" == 1 && "$C_RSM" == local ]]; then
		fetch_rsm "$C_VERSION"
	fi
	if [[ "$C_TIERED" == 1 && "$C_RSM" == aiven ]]; then
		fetch_aiven_rsm
	fi
}

bootstrap_line() {
	local dir="$1" i addrs=""
	for ((i = 1; i <= C_NODES; i++)); do
		addrs+="${addrs:+,}127.0.0.1:$(broker_port "$(node_dir "$dir" "$i")")"
	done
	echo "RLMM_KAFKA_BOOTSTRAP=$addrs"
	if [[ "$C_TIERED" == 1 ]]; then
		echo "RLMM_KAFKA_REMOTE_DIR=$dir/tiered"
		echo "RLMM_KAFKA_RSM=$C_RSM"
	fi
	if [[ "$C_SECURITY" != none ]]; then
		addrs=""
		for ((i = 1; i <= C_NODES; i++)); do
			addrs+="${addrs:+,}127.0.0.1:$(prop "$(node_dir "$dir" "$i")/server.properties" listeners |
				sed -n 's/.*SASL_SSL:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p')"
		done
		echo "RLMM_KAFKA_SASL_BOOTSTRAP=$addrs"
		echo "RLMM_KAFKA_SECURITY_DIR=$dir/security"
	fi
}

launch_node() {
	local ndir="$1" pid
	if pid="$(running_pid "$ndir")"; then
		log "node in $ndir already running (pid $pid)"
		return 0
	fi
	local jvm_security=()
	if [[ "$C_SECURITY" == gssapi ]]; then
		# The broker's Kerberos configuration: the test KDC's, not the system's.
		jvm_security=(-Djava.security.krb5.conf="$C_KRB5_DIR/krb5.conf")
	fi
	# setsid: the broker outlives this script and is stopped only by `stop`.
	setsid nohup java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -Djava.awt.headless=true ${jvm_security[@]+"${jvm_security[@]}"} \
		-Dlog4j2.configurationFile="$ndir/log4j2.properties" -Dkafka.logs.dir="$ndir" \
		-cp "$(libs_dir "$C_VERSION")/*" kafka.Kafka "$ndir/server.properties" >>"$ndir/broker.out" 2>&1 </dev/null &
	echo $! >"$ndir/pid"
}

start() {
	local dir="$1" node="${2:-}"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	trace "$dir" "start: begin"
	build_probe
	trace "$dir" "start: probe built"
	if [[ ! -f "$dir/server.properties" && ! -f "$dir/cluster.env" ]]; then
		[[ -z "$node" ]] || die "$dir is not configured yet: start the whole cluster first"
		new_cluster "$dir"
		fetch_for_cluster
		configure "$dir"
	else
		load_cluster "$dir"
		fetch_for_cluster
	fi
	local i nodes
	mapfile -t nodes < <(node_list "$dir" "$node")
	# Every node first, then the waits: a quorum of several voters forms only
	# when they run at once.
	for i in "${nodes[@]}"; do
		launch_node "$(node_dir "$dir" "$i")"
	done
	trace "$dir" "start: launched"
	for i in "${nodes[@]}"; do
		local ndir port
		ndir="$(node_dir "$dir" "$i")"
		port="$(broker_port "$ndir")"
		[[ -n "$port" ]] || die "no PLAINTEXT listener in $ndir/server.properties"
		if ! "$PROBE" wait "127.0.0.1:$port" "$START_TIMEOUT" "$i"; then
			log "node $i did not become ready; last lines of $ndir/broker.log and broker.out:"
			tail -n 30 "$ndir/broker.log" "$ndir/broker.out" >&2 || true
			stop "$dir" "$node" || true
			exit 1
		fi
	done
	trace "$dir" "start: every node answers"
	bootstrap_line "$dir"
}

stop_pids() {
	local pid waited=0 alive
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	while :; do
		alive=()
		for pid in "$@"; do
			if kill -0 "$pid" 2>/dev/null; then alive+=("$pid"); fi
		done
		((${#alive[@]} == 0)) && return 0
		if ((waited >= STOP_TIMEOUT_S * 10)); then
			log "broker pid(s) ${alive[*]} ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
			kill -KILL "${alive[@]}" 2>/dev/null || true
			for pid in "${alive[@]}"; do
				while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
			done
			return 0
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
}

stop() {
	local dir="$1" node="${2:-}"
	[[ -d "$dir" ]] || {
		log "no broker running in $dir"
		return 0
	}
	load_cluster "$dir"
	local i pid brokers=() controllers=() ndir
	for i in $(node_list "$dir" "$node"); do
		ndir="$(node_dir "$dir" "$i")"
		if pid="$(running_pid "$ndir")"; then
			if ((i <= C_CONTROLLERS)); then controllers+=("$pid"); else brokers+=("$pid"); fi
		else
			log "no broker running in $ndir"
		fi
	done
	trace "$dir" "stop: begin"
	# Broker-only nodes first: their controlled shutdown needs a controller.
	if ((${#brokers[@]} > 0)); then stop_pids "${brokers[@]}"; fi
	if ((${#controllers[@]} > 0)); then stop_pids "${controllers[@]}"; fi
	trace "$dir" "stop: every node gone"
	for i in $(node_list "$dir" "$node"); do
		ndir="$(node_dir "$dir" "$i")"
		running_pid "$ndir" >/dev/null || rm -f "$ndir/pid"
	done
}

status() {
	local dir="$1" node="${2:-}" i ndir port
	[[ -f "$dir/server.properties" || -f "$dir/cluster.env" ]] || die "$dir has no cluster"
	load_cluster "$dir"
	build_probe
	for i in $(node_list "$dir" "$node"); do
		ndir="$(node_dir "$dir" "$i")"
		port="$(broker_port "$ndir")"
		"$PROBE" wait "127.0.0.1:$port" 5s
	done
	bootstrap_line "$dir"
}

# ---- faults: one node killed, paused, resumed (the fault tests, faulttest/) ----

# signal_node DIR NODE SIGNAL sends SIGNAL to the node's broker; after KILL,
# waits until the process is gone and drops its pid file.
signal_node() {
	local dir="$1" node="$2" sig="$3" ndir pid
	load_cluster "$dir"
	ndir="$(node_dir "$dir" "$(node_list "$dir" "$node")")"
	pid="$(running_pid "$ndir")" || die "node $node in $dir is not running"
	kill "-$sig" "$pid"
	if [[ "$sig" == KILL ]]; then
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		rm -f "$ndir/pid"
	fi
}

# ---- security: SASL_SSL with SCRAM-SHA-512 and the StandardAuthorizer ----

# make_security DIR generates, once, what the secure listeners need: a CA and
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

# scram_args DIR prints StorageTool's --add-scram arguments (one a line) for
# the users of DIR/users.properties, so the users exist at the first start.
# They hold the passwords: they go to StorageTool, never to a log.
scram_args() {
	local user pass
	while IFS='=' read -r user pass; do
		[[ -n "$user" ]] || continue
		echo "--add-scram"
		echo "SCRAM-SHA-512=[name=$user,password=$pass]"
	done <"$1/users.properties"
}

# configure_security FILE SECURITY_DIR PORT adds a SASL_SSL listener on PORT
# to a node's server.properties, and the authorizer. Inter-broker and
# controller traffic stays on the loopback PLAINTEXT listeners, whose
# principal (User:ANONYMOUS) is therefore a super user beside User:admin;
# every other principal needs ACLs (allow.everyone.if.no.acl.found=false).
configure_security() {
	local file="$1" sec="$2" port="$3"
	sed -i -e "s|^listeners=.*|&,SASL_SSL://127.0.0.1:$port|" \
		-e "s|^advertised.listeners=.*|&,SASL_SSL://127.0.0.1:$port|" \
		-e "s|^listener.security.protocol.map=.*|&,SASL_SSL:SASL_SSL|" "$file"
	cat >>"$file" <<EOF
# KAFKA_SECURITY=sasl_ssl
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

# configure_gssapi FILE SECURITY_DIR PORT adds a SASL_SSL listener on PORT
# that takes GSSAPI: the broker logs in as kafka/127.0.0.1 from the KDC's
# broker.keytab (its JAAS entry is the listener's sasl.jaas.config; its
# krb5.conf the JVM's java.security.krb5.conf, see launch_node), presents
# the cluster's certificate, and requires a client certificate from the
# cluster's CA. No authorizer: every authenticated principal may do anything.
configure_gssapi() {
	local file="$1" sec="$2" port="$3" realm
	realm="$(cat "$C_KRB5_DIR/realm")"
	sed -i -e "s|^listeners=.*|&,SASL_SSL://127.0.0.1:$port|" \
		-e "s|^advertised.listeners=.*|&,SASL_SSL://127.0.0.1:$port|" \
		-e "s|^listener.security.protocol.map=.*|&,SASL_SSL:SASL_SSL|" "$file"
	cat >>"$file" <<EOF
# KAFKA_SECURITY=gssapi (KDC of $C_KRB5_DIR)
sasl.enabled.mechanisms=GSSAPI
sasl.kerberos.service.name=kafka
listener.name.sasl_ssl.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="$C_KRB5_DIR/broker.keytab" principal="kafka/127.0.0.1@$realm";
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$sec/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$(cat "$sec/keystore.password")
listener.name.sasl_ssl.ssl.truststore.type=PEM
listener.name.sasl_ssl.ssl.truststore.location=$sec/ca.pem
listener.name.sasl_ssl.ssl.client.auth=required
EOF
}

cmd="${1:-}"
case "$cmd" in
fetch)
	C_VERSION="${KAFKA_VERSION:-4.4.0}" C_TIERED="${KAFKA_TIERED:-0}"
	C_RSM="${KAFKA_RSM:-$(default_rsm "$C_VERSION")}"
	fetch_for_cluster
	if [[ "$C_TIERED" == 1 && "$C_RSM" == fixture ]]; then
		fixture_rsm_jar >/dev/null
	fi
	;;
start | stop | restart | status)
	[[ $# -eq 2 || $# -eq 3 ]] || die "usage: $0 $cmd <dir> [node]"
	case "$cmd" in
	start) start "$2" "${3:-}" ;;
	stop) stop "$2" "${3:-}" ;;
	restart)
		stop "$2" "${3:-}"
		start "$2" "${3:-}"
		;;
	status) status "$2" "${3:-}" ;;
	esac
	;;
plugin-jar) plugin_jar ;;
fixture-rsm-jar) fixture_rsm_jar ;;
pid)
	[[ $# -eq 3 ]] || die "usage: $0 pid <dir> <node>"
	load_cluster "$2"
	running_pid "$(node_dir "$2" "$(node_list "$2" "$3")")"
	;;
kill | pause | resume)
	[[ $# -eq 3 ]] || die "usage: $0 $cmd <dir> <node>"
	case "$cmd" in
	kill) signal_node "$2" "$3" KILL ;;
	pause) signal_node "$2" "$3" STOP ;;
	resume) signal_node "$2" "$3" CONT ;;
	esac
	;;
*) die "usage: $0 fetch | start <dir> [node] | stop <dir> [node] | restart <dir> [node] | status <dir> [node] | pid <dir> <node> | kill|pause|resume <dir> <node> | plugin-jar | fixture-rsm-jar" ;;
esac
