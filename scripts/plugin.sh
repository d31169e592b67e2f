#!/usr/bin/env bash
# Builds and tests rlmm's Kafka broker plugin (plugin/: a RemoteLogMetadataManager
# that is a thin gRPC client of `rlmm serve`).
#
#   scripts/plugin.sh build   build the rlmm binary (plugin/target/rlmm) and the shaded
#                             plugin jar (Maven skipped when nothing changed since the
#                             last build); prints the jar's path on stdout
#   scripts/plugin.sh test    build, then `mvn verify`: the tests against a real rlmm
#                             serve, the packaged jar loaded as a broker loads it, and,
#                             when RLMM_KAFKA_BOOTSTRAP is set, against that broker
#   scripts/plugin.sh bench [args]  build, then the timed-loop benchmark
#                             (org.rlmm.plugin.PluginBenchmark; --help for its flags)
#
# Environment: RLMM_KAFKA_BOOTSTRAP (the broker scripts/kafka.sh started), CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/plugin"
TARGET="$PROJECT/target"
BINARY="$TARGET/rlmm"
JAR="$TARGET/rlmm-plugin-0.1.0.jar"
STAMP="$TARGET/.rlmm-build-stamp"

log() { echo "plugin.sh: $*" >&2; }
die() { log "$*"; exit 1; }

build_binary() {
	command -v go >/dev/null || die "go not found: install Go 1.26"
	mkdir -p "$TARGET"
	# go build is itself incremental: an unchanged tree relinks nothing.
	(cd "$ROOT" && go build -o "$BINARY" ./cmd/rlmm) || die "go build ./cmd/rlmm failed"
}

jar_up_to_date() {
	[[ -f "$STAMP" && -f "$JAR" ]] || return 1
	[[ -z "$(find "$PROJECT/pom.xml" "$PROJECT/src/main" "$ROOT/proto" -newer "$STAMP" -print -quit)" ]]
}

build_jar() {
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	if jar_up_to_date; then
		return 0
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	log "building $PROJECT with Maven (the first run downloads gRPC, protobuf and Kafka's API jars)"
	local started
	started="$(date +%s)"
	touch "$STAMP.new" 2>/dev/null || { mkdir -p "$TARGET" && touch "$STAMP.new"; }
	if ! mvn -B -q -f "$PROJECT/pom.xml" package -DskipTests >&2; then
		rm -f "$STAMP.new"
		die "maven build of $PROJECT failed (see its output above)"
	fi
	mv "$STAMP.new" "$STAMP"
	log "built in $(($(date +%s) - started))s"
}

build() {
	build_binary
	build_jar
	echo "$JAR"
}

run_tests() {
	build_binary
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	touch "$STAMP.new" 2>/dev/null || { mkdir -p "$TARGET" && touch "$STAMP.new"; }
	if ! mvn -B -f "$PROJECT/pom.xml" verify -Drlmm.binary="$BINARY"; then
		rm -f "$STAMP.new"
		die "plugin tests failed"
	fi
	mv "$STAMP.new" "$STAMP"
}

bench() {
	build_binary
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	local cp="$TARGET/test-classpath.txt"
	mvn -B -q -f "$PROJECT/pom.xml" test-compile dependency:build-classpath -Dmdep.outputFile="$cp" \
		-Dmdep.includeScope=test >&2 || die "maven could not compile the benchmark"
	# Kafka 4.4.0's API (the tests' version) ahead of the 4.0.0 the plugin compiles against.
	local kafka="$TARGET/kafka-test-lib/kafka-clients.jar:$TARGET/kafka-test-lib/kafka-storage-api.jar"
	# shellcheck disable=SC2086 # JAVA_OPTS is a list of JVM flags.
	exec java ${JAVA_OPTS:--Xmx1g} -Drlmm.binary="$BINARY" \
		-cp "$kafka:$TARGET/test-classes:$TARGET/classes:$(cat "$cp")" org.rlmm.plugin.PluginBenchmark "$@"
}

case "${1:-}" in
build) build ;;
test) run_tests ;;
bench)
	shift
	bench "$@"
	;;
*) die "usage: $0 build | test | bench [args]" ;;
esac
