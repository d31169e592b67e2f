#!/usr/bin/env bash
# The broker tests (brokertest/): Kafka 4.3.1 brokers with tiered storage
# (LocalTieredStorage), started and stopped by the tests through
# scripts/kafka.sh, with the RLMM named by the argument:
#
#   scripts/broker-test.sh rlmm    rlmm's broker plugin (make broker-test)
#   scripts/broker-test.sh kafka   Kafka's own TopicBasedRemoteLogMetadataManager (make broker-test-kafka)
#
# It fetches the 4.3.1 jars (cached under ~/.cache/rlmm), builds the plugin
# for `rlmm` (unless RLMM_PLUGIN_JAR names one), and runs the package with the
# race detector. Extra arguments go to go test (e.g. -run TestLeadershipMoves).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
case "$mode" in
rlmm | kafka) shift ;;
*)
	echo "usage: $0 rlmm|kafka [go test flags]" >&2
	exit 2
	;;
esac

KAFKA_VERSION="${RLMM_BROKER_KAFKA_VERSION:-4.3.1}" KAFKA_TIERED=1 bash scripts/kafka.sh fetch
if [[ "$mode" == rlmm && -z "${RLMM_PLUGIN_JAR:-}" ]]; then
	RLMM_PLUGIN_JAR="$(bash scripts/kafka.sh plugin-jar)"
	export RLMM_PLUGIN_JAR
	echo "plugin jar: $RLMM_PLUGIN_JAR"
fi
export RLMM_BROKER_TEST="$mode"
go test -race -count=1 -v -timeout 30m "$@" ./brokertest/
