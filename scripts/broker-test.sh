#!/usr/bin/env bash
# The broker tests (test/broker/): Kafka brokers with tiered storage, started and stopped by
# the tests through test/kafkatest, with the RLMM named by the argument:
#
#   scripts/broker-test.sh rlmm              rlmm's broker plugin (make broker-test)
#   scripts/broker-test.sh kafka             Kafka's own TopicBasedRemoteLogMetadataManager
#                                            (make broker-test-kafka)
#   scripts/broker-test.sh versions rlmm|kafka
#                                            the other Kafka 4.x lines, one after the other
#                                            (make broker-test-versions): TestTieringLifecycle on
#                                            the oldest and the newest (VERSIONS_FULL), the short
#                                            TestTieringCheck on the ones between (VERSIONS_CHECK)
#
# rlmm|kafka run every test on RLMM_KAFKA_VERSION [4.3.1]. Every version tiers to its own
# LocalTieredStorage (kafka-storage:<version>:jar:test), but 4.4.0, whose test jar is not
# served, to the project's test RSM (test/broker/fixture-rsm; kafkatest.DefaultRSM). The
# tests resolve the jars (cached under ~/.cache/rlmm, RLMM_CACHE) and build the plugin
# (scripts/plugin.sh build) themselves; this script runs the package with the race
# detector. Extra arguments go to go test (e.g. -run TestLeadershipMoves); a -run pattern
# that matches no test fails the run (go test alone would pass it).
#
# The Aiven tests (test/broker/aiven_test.go) tier to Aiven's tiered-storage-for-apache-kafka
# v1.0.0 on S3: its build in ../shared/aiven-rsm beside the repository (its runtime
# dependencies resolved by kafkatest.AivenRSM), and the S3 server of
# RLMM_S3_ENDPOINT/_ACCESS_KEY/_SECRET_KEY (make test's SeaweedFS); without one this
# script starts SeaweedFS itself (scripts/seaweedfs.sh) for the run, unless RLMM_SKIP_S3=1
# (the Aiven tests then say why they skip; in CI they fail).
set -euo pipefail
cd "$(dirname "$0")/.."

# The 4.x lines besides the default 4.3.1, as make test runs them.
VERSIONS_FULL=(4.0.1 4.4.0)
VERSIONS_CHECK=(4.1.1 4.2.1)

versions=""
if [[ "${1:-}" == versions ]]; then
	versions=1
	shift
fi
mode="${1:-}"
case "$mode" in
rlmm | kafka) shift ;;
*)
	echo "usage: $0 [versions] rlmm|kafka [go test flags]" >&2
	exit 2
	;;
esac

export RLMM_BROKER_TEST="$mode"

# A -run (-test.run) pattern that matches no test makes go test and a test binary print this
# warning and exit 0: ran_nothing fails such a run, which has checked nothing.
ran_nothing() {
	if grep -q '^testing: warning: no tests to run' "$1"; then
		echo "broker-test.sh: no test matched ($2): nothing was checked" >&2
		return 0
	fi
	return 1
}

bin="$(mktemp -d "${TMPDIR:-/tmp}/rlmm-broker-test.XXXXXX")"
trap 'rm -rf "$bin"' EXIT

if [[ -z "$versions" ]]; then
	if [[ -z "${RLMM_S3_ENDPOINT:-}" && "${RLMM_SKIP_S3:-}" != 1 ]]; then
		s3_home="$bin/s3"
		trap 'bash scripts/seaweedfs.sh stop "$s3_home" || true; rm -rf "$bin"' EXIT
		eval "$(bash scripts/seaweedfs.sh start "$s3_home" | grep '^RLMM_S3_')"
		[[ -n "${RLMM_S3_ENDPOINT:-}" ]] || { echo "scripts/seaweedfs.sh start $s3_home failed" >&2; exit 1; }
		export RLMM_S3_ENDPOINT RLMM_S3_ACCESS_KEY RLMM_S3_SECRET_KEY
		echo "S3 (SeaweedFS) for the Aiven tests at $RLMM_S3_ENDPOINT"
	fi
	status=0
	go test -race -count=1 -v -timeout 30m "$@" ./test/broker/ 2>&1 | tee "$bin/out" || status=${PIPESTATUS[0]}
	if ran_nothing "$bin/out" "go test $*"; then
		exit 1
	fi
	exit "$status"
fi

# One test binary for every version (go test would link it once per run).
go test -race -c -o "$bin/brokertest.test" ./test/broker/
status=0
run() {
	local version="$1" test="$2" started
	started="$(date +%s)"
	echo "=== Kafka $version: $test"
	# The binary runs in the package's directory, as go test runs it.
	local rc=0
	(cd test/broker && RLMM_KAFKA_VERSION="$version" "$bin/brokertest.test" \
		-test.v -test.timeout 15m -test.run "^$test\$" "$@") 2>&1 | tee "$bin/out" || rc=${PIPESTATUS[0]}
	if ran_nothing "$bin/out" "Kafka $version: -test.run ^$test\$ $*"; then
		rc=1
	fi
	if ((rc == 0)); then
		echo "=== Kafka $version: $test passed in $(($(date +%s) - started))s"
	else
		echo "=== Kafka $version: $test FAILED after $(($(date +%s) - started))s"
		status=1
	fi
}
for v in "${VERSIONS_FULL[@]}"; do run "$v" TestTieringLifecycle "$@"; done
for v in "${VERSIONS_CHECK[@]}"; do run "$v" TestTieringCheck "$@"; done
exit "$status"
