#!/usr/bin/env bash
# Builds and runs the Java interop harness in test/interop/java/ (Apache Kafka 4.4.0's own
# RLMM code from Maven Central, driven by small Java programs).
#
#   scripts/interop.sh build                 compile and copy the runtime jars into
#                                            test/interop/java/target/lib (skips Maven when
#                                            nothing changed since the last build)
#   scripts/interop.sh run <Main> [args...]  run a main class (short names such as
#                                            KafkaRlmmDriver mean org.rlmm.interop.*)
#   scripts/interop.sh vectors               regenerate testdata/kafka-vectors.json
#   scripts/interop.sh selftest [BOOTSTRAP]  write test/interop/java/examples/workload-basic.json
#                                            with Kafka's manager, dump it with a fresh one,
#                                            compare with workload-basic.dump.json (starts
#                                            and stops a broker of test/kafkatest when no
#                                            bootstrap is given)
#
# Environment: JAVA_OPTS (default -Xmx2g) for `run`; logs go to stderr, each
# program's JSON result to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/test/interop/java"
TARGET="$PROJECT/target"
STAMP="$TARGET/.rlmm-build-stamp"

log() { echo "interop.sh: $*" >&2; }
die() { log "$*"; exit 1; }

up_to_date() {
	[[ -f "$STAMP" && -d "$TARGET/lib" && -d "$TARGET/classes" ]] || return 1
	# Any source or the POM newer than the stamp means a rebuild.
	[[ -z "$(find "$PROJECT/pom.xml" "$PROJECT/src" -newer "$STAMP" -print -quit)" ]]
}

build() {
	command -v java >/dev/null || die "java not found: install a JDK 17+"
	if up_to_date; then
		return 0
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven 3.8+"
	log "building $PROJECT with Maven (the first run downloads Kafka 4.4.0's jars)"
	local started
	started="$(date +%s)"
	# The stamp is taken before Maven runs so edits made during the build count as newer.
	touch "$STAMP.new" 2>/dev/null || { mkdir -p "$TARGET" && touch "$STAMP.new"; }
	if ! mvn -B -q -f "$PROJECT/pom.xml" package >&2; then
		rm -f "$STAMP.new"
		die "maven build of $PROJECT failed (see its output above)"
	fi
	mv "$STAMP.new" "$STAMP"
	log "built in $(($(date +%s) - started))s"
}

run() {
	[[ $# -ge 1 ]] || die "usage: $0 run <Main> [args...]"
	build
	local main="$1"
	shift
	[[ "$main" == *.* ]] || main="org.rlmm.interop.$main"
	# shellcheck disable=SC2086 # JAVA_OPTS is a list of JVM flags.
	exec java ${JAVA_OPTS:--Xmx2g} -cp "$TARGET/classes:$TARGET/lib/*" "$main" "$@"
}

selftest() {
	build
	local bootstrap="${1:-}"
	if [[ -z "$bootstrap" ]]; then
		# Global: the EXIT trap runs after this function's locals are gone.
		SELFTEST_DIR="$(mktemp -d "${TMPDIR:-/tmp}/rlmm-interop-selftest.XXXXXX")"
		trap '[[ -d "$SELFTEST_DIR/kafka" ]] && "$SELFTEST_DIR/kafkatest" stop "$SELFTEST_DIR/kafka" >/dev/null 2>&1; rm -rf "$SELFTEST_DIR"' EXIT
		(cd "$ROOT" && go build -o "$SELFTEST_DIR/kafkatest" ./test/kafkatest/cmd/kafkatest) || die "go build ./test/kafkatest/cmd/kafkatest failed"
		bootstrap="$("$SELFTEST_DIR/kafkatest" start "$SELFTEST_DIR/kafka" | sed -n 's/^RLMM_KAFKA_BOOTSTRAP=//p')"
		[[ -n "$bootstrap" ]] || die "kafkatest start printed no bootstrap address"
	fi
	local cp="$TARGET/classes:$TARGET/lib/*" ex="$PROJECT/examples" id=AAAAAAAAAAEAAAAAAAAAAg
	# The example uses a fixed topic id; a broker that already holds it gives a different view.
	java -cp "$cp" org.rlmm.interop.KafkaRlmmDriver workload --bootstrap "$bootstrap" \
		--topic-id "$id" --topic foo --partitions 3 --spec "$ex/workload-basic.json" >/dev/null ||
		die "workload failed"
	local got
	got="$(java -cp "$cp" org.rlmm.interop.KafkaRlmmDriver dump --bootstrap "$bootstrap" \
		--partitions "$id:foo-0,$id:foo-1,$id:foo-2")" || die "dump failed"
	python3 - "$ex/workload-basic.dump.json" "$got" <<'PY' || die "dump differs from $ex/workload-basic.dump.json"
import json, sys
want = json.load(open(sys.argv[1]))
got = json.loads(sys.argv[2])
got.pop("kafkaVersion", None)
if got != want:
    print(json.dumps(got, indent=1), file=sys.stderr)
    sys.exit(1)
PY
	log "selftest passed: Kafka's manager read back what it wrote (broker $bootstrap)"
}

cmd="${1:-}"
case "$cmd" in
build) build ;;
run)
	shift
	run "$@"
	;;
vectors)
	build
	java -cp "$TARGET/classes:$TARGET/lib/*" org.rlmm.interop.KafkaVectors "$ROOT/testdata/kafka-vectors.json"
	;;
selftest)
	shift
	selftest "$@"
	;;
*) die "usage: $0 build | run <Main> [args...] | vectors | selftest [bootstrap]" ;;
esac
