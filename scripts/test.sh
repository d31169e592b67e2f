#!/usr/bin/env bash
# The project's test command (make test, .ci/run). With no argument it runs
# everything; `lint` runs only the static checks.
#
# Environment:
#   RLMM_SKIP_KAFKA=1  do not fetch and start a real Kafka broker (tests that
#                      need one then say why they skip; in CI they fail).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

lint() {
	step "gofmt"
	unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
	if [ -n "$unformatted" ]; then
		echo "gofmt would change:"; echo "$unformatted"; exit 1
	fi
	step "go vet"
	go vet ./...
	step "staticcheck"
	go tool staticcheck ./...
}

if [ "${1:-}" = lint ]; then
	lint
	exit 0
fi

lint

work=$(mktemp -d "${TMPDIR:-/tmp}/rlmm-test.XXXXXX")
cleanup() {
	if [ -n "${RLMM_KAFKA_HOME:-}" ]; then
		bash scripts/kafka.sh stop "$RLMM_KAFKA_HOME" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if [ "${RLMM_SKIP_KAFKA:-}" != 1 ]; then
	step "Apache Kafka 4.4.0 (Maven Central) and the Java interop harness"
	bash scripts/kafka.sh fetch
	if [ -f scripts/interop.sh ]; then
		bash scripts/interop.sh build
		export RLMM_INTEROP=1
	fi
	export RLMM_KAFKA_HOME="$work/kafka"
	eval "$(bash scripts/kafka.sh start "$RLMM_KAFKA_HOME" | grep '^RLMM_KAFKA_BOOTSTRAP=')"
	export RLMM_KAFKA_BOOTSTRAP
	echo "broker at $RLMM_KAFKA_BOOTSTRAP"
fi

# --- the Kafka broker plugin (plugin/, scripts/plugin.sh) ---------------------------
# Its tests need Java and Maven like the interop harness; with the broker above they
# also drive the plugin against it (RLMM_KAFKA_BOOTSTRAP), without it they say why
# they skip (and fail in CI).
if [ -f scripts/plugin.sh ]; then
	step "broker plugin: mvn verify (plugin/)"
	bash scripts/plugin.sh test
fi
# --- end of the broker plugin ------------------------------------------------------

step "go test -race ./..."
go test -race -timeout 30m ./...

# Kafka's own tiered-storage integration suite with rlmm's plugin as the RLMM (kafkasuite/,
# docs/COMPATIBILITY.md; 35-40 minutes on a busy 2-core machine). RLMM_SKIP_KAFKA_SUITE=1 leaves it out.
if [ "${RLMM_SKIP_KAFKA_SUITE:-}" != 1 ]; then
	step "Kafka's tiered-storage integration suite with rlmm's plugin (make kafka-suite)"
	bash scripts/kafkasuite.sh rlmm
fi

step "short fuzzing"
bash scripts/fuzz-short.sh
