#!/usr/bin/env bash
# Builds and tests rlmm's Kafka broker plugin (plugin/: a RemoteLogMetadataManager
# that is a thin client of `rlmm serve` over its framed socket).
#
#   scripts/plugin.sh build   build the rlmm binary (plugin/target/rlmm), the binaries the jar
#                             carries (linux/amd64 and linux/arm64, CGO off, without S3: -tags
#                             rlmm_nos3, with their SHA-256) and the shaded plugin jar (Maven skipped when nothing
#                             changed since the last build); prints the jar's path on stdout
#   scripts/plugin.sh dist    build, then write dist/: rlmm-plugin-<version>.jar,
#                             rlmm-<version>-linux-{amd64,arm64}.tar.gz and SHA256SUMS (make dist)
#   scripts/plugin.sh test    build, then `mvn verify`: the tests against a real rlmm
#                             serve, the packaged jar loaded as a broker loads it, and,
#                             when RLMM_KAFKA_BOOTSTRAP is set, against that broker
#   scripts/plugin.sh bench [args]  build, then the timed-loop benchmark
#                             (org.rlmm.plugin.PluginBenchmark; --help for its flags)
#
# Environment: RLMM_KAFKA_BOOTSTRAP (the broker make test starts with test/kafkatest), CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/plugin"
TARGET="$PROJECT/target"
BINARY="$TARGET/rlmm"
# The project's version: the first <version> of the pom is the project's own.
VERSION="$(sed -n 's:.*<version>\([^<]*\)</version>.*:\1:p' "$PROJECT/pom.xml" | head -1)"
JAR="$TARGET/rlmm-plugin-$VERSION.jar"
STAMP="$TARGET/.rlmm-build-stamp"
# The binaries the jar carries (pom.xml's rlmm.bin.dir; BinaryExtractor reads them from the jar).
BIN_RESOURCES="$TARGET/rlmm-bin"
BIN_PLATFORMS=(linux-amd64 linux-arm64)
DIST="$ROOT/dist"

log() { echo "plugin.sh: $*" >&2; }
die() { log "$*"; exit 1; }

build_binary() {
	command -v go >/dev/null || die "go not found: install Go 1.26"
	mkdir -p "$TARGET"
	# go build is itself incremental: an unchanged tree relinks nothing.
	(cd "$ROOT" && go build -o "$BINARY" ./cmd/rlmm) || die "go build ./cmd/rlmm failed"
}

# cross_build PLATFORM OUT [go build flags...]: the rlmm binary of PLATFORM (os-arch), static
# (CGO off) and without local paths (-trimpath).
cross_build() {
	local platform="$1" out="$2"
	shift 2
	(cd "$ROOT" && CGO_ENABLED=0 GOOS="${platform%-*}" GOARCH="${platform#*-}" \
		go build -trimpath "$@" -o "$out" ./cmd/rlmm) || die "go build ./cmd/rlmm for $platform failed"
}

# build_bundled builds the rlmm binary of each platform the jar carries into
# $BIN_RESOURCES/org/rlmm/plugin/bin/<platform>/rlmm with rlmm.sha256 beside it. The jar's binary
# is the broker's sidecar: built with -tags rlmm_nos3, without the AWS SDK that only scrub, rebuild
# and repair use on S3 (13 MB of binary, and 0.7 MB of heap its package initialisation allocates
# at every start: docs/bench/broker.md). A binary whose bytes did not change is left as it
# was (its file's time too), so an unchanged tree does not repackage the jar.
build_bundled() {
	local platform dir
	for platform in "${BIN_PLATFORMS[@]}"; do
		dir="$BIN_RESOURCES/org/rlmm/plugin/bin/$platform"
		mkdir -p "$dir"
		cross_build "$platform" "$dir/rlmm.new" -tags rlmm_nos3
		if [[ -f "$dir/rlmm.sha256" ]] && cmp -s "$dir/rlmm.new" "$dir/rlmm"; then
			rm -f "$dir/rlmm.new"
			continue
		fi
		mv "$dir/rlmm.new" "$dir/rlmm"
		(cd "$dir" && sha256sum rlmm >rlmm.sha256.new && mv rlmm.sha256.new rlmm.sha256)
	done
}

jar_up_to_date() {
	[[ -f "$STAMP" && -f "$JAR" ]] || return 1
	[[ -z "$(find "$PROJECT/pom.xml" "$PROJECT/src/main" "$ROOT/proto" -newer "$STAMP" -print -quit)" ]] || return 1
	# Only the binaries' files: build_bundled creates and removes rlmm.new in their directories on
	# every build, which makes the directories newer than the stamp even when no binary changed.
	[[ -z "$(find "$BIN_RESOURCES" -type f -newer "$STAMP" -print -quit)" ]]
}

build_jar() {
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	if jar_up_to_date; then
		return 0
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	log "building $PROJECT with Maven (the first run downloads protobuf and Kafka's API jars)"
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
	build_bundled
	build_jar
	echo "$JAR"
}

# dist writes the release files into dist/: the plugin jar (both sidecar binaries inside), a
# tarball per platform with the whole rlmm (every command, S3 included; also usable as
# rlmm.serve.binary), and their SHA-256 sums (sha256sum -c SHA256SUMS checks them).
dist() {
	build >/dev/null
	command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
	rm -rf "$DIST"
	mkdir -p "$DIST"
	cp "$JAR" "$DIST/rlmm-plugin-$VERSION.jar"
	local files=("rlmm-plugin-$VERSION.jar") platform name stage
	stage="$(mktemp -d "${TMPDIR:-/tmp}/rlmm-dist.XXXXXX")"
	for platform in "${BIN_PLATFORMS[@]}"; do
		name="rlmm-$VERSION-$platform"
		mkdir -p "$stage/$name"
		cross_build "$platform" "$stage/$name/rlmm"
		chmod 0755 "$stage/$name/rlmm"
		cp "$ROOT/LICENSE" "$ROOT/README.md" "$stage/$name/"
		# Owner, order and times fixed: the same binaries give the same tarball.
		tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -cf - "$name" |
			gzip -n -9 >"$DIST/$name.tar.gz"
		files+=("$name.tar.gz")
	done
	rm -rf "$stage"
	(cd "$DIST" && sha256sum "${files[@]}" >SHA256SUMS)
	log "wrote $DIST:"
	(cd "$DIST" && ls -l "${files[@]}" SHA256SUMS >&2)
	cat "$DIST/SHA256SUMS"
}

run_tests() {
	build_binary
	build_bundled
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	# test/kafkatest's command, with which BrokerJmxTest starts its broker.
	(cd "$ROOT" && go build -o "$TARGET/kafkatest" ./test/kafkatest/cmd/kafkatest) || die "go build ./test/kafkatest/cmd/kafkatest failed"
	touch "$STAMP.new" 2>/dev/null || { mkdir -p "$TARGET" && touch "$STAMP.new"; }
	if ! mvn -B -f "$PROJECT/pom.xml" verify -Drlmm.binary="$BINARY" -Dkafkatest.binary="$TARGET/kafkatest"; then
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
dist) dist ;;
test) run_tests ;;
bench)
	shift
	bench "$@"
	;;
*) die "usage: $0 build | dist | test | bench [args]" ;;
esac
