#!/usr/bin/env bash
# make bench-compare: Apache Kafka 4.4.0's own Java RLMM and rlmm, side by side,
# on the same fresh broker(s), same workloads, in one run. The broker-bound steps run
# in rounds that alternate which side goes first (Java in odd rounds, rlmm in even
# ones), so that neither always meets the broker the other one warmed; the tables
# give each cell's median over the rounds with its range.
# Writes the tables into docs/bench/compare.md between the markers
#   <!-- bench-compare:begin --> and <!-- bench-compare:end -->
# (appended to the file if absent; nothing else in the file is touched).
#
# Measured:
#   1. mutation latency (add, then update to COPY_SEGMENT_FINISHED), 1 and 16 callers
#      (KafkaRlmmDriver bench-mutations / rlmmbench mutations, same broker), BENCH_MUT_RUNS rounds;
#   2. cold start to ready after N events, a fresh broker per N (KafkaRlmmDriver
#      fill, then bench-coldstart; rlmmbench coldstart from scratch and from its snapshot);
#   3. lookup by (epoch, offset), 10,000 segments in a partition (KafkaRlmmDriver
#      bench-lookup, one partition; go test -bench BenchmarkSegmentForOffset/copy-1partition
#      ./memory like for like, and the 8-partition copy and into rows as the harder case);
#   4. heap per live segment at 1,000,000 segments (KafkaRlmmDriver bench-heap;
#      go test -bench BenchmarkRetainedHeap/100x10000 ./memory);
#   5. the broker workload, scripts/bench-broker.sh (its own section; BENCH_BROKER=0 skips it).
#
# Environment (defaults in brackets):
#   BENCH_MUT_COUNT_1 [500]        segments copied by the single caller
#   BENCH_MUT_COUNT_16 [3200]      segments copied by 16 callers
#   BENCH_MUT_WARMUP_S [15]        seconds every mutation run copies untimed first, with all its callers
#   BENCH_MUT_RUNS [3]             mutation rounds (each side once per round, the first side alternating)
#   BENCH_COLDSTART_EVENTS ["100000 1000000"]  event counts, one fresh broker each
#   BENCH_COLDSTART_RUNS [3]       cold-start rounds per count (each side once per round, the first side
#                                  alternating; median and range reported)
#   BENCH_HEAP_SEGMENTS [1000000]  segments of the heap benchmarks
#   BENCH_OUT [a temp dir]         where the raw JSON and text results go (kept)
#   BENCH_WRITE [1]                0: print the tables, do not edit docs/bench/compare.md
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MUT1="${BENCH_MUT_COUNT_1:-500}"
MUT16="${BENCH_MUT_COUNT_16:-3200}"
MUT_WARMUP_S="${BENCH_MUT_WARMUP_S:-15}"
MUT_RUNS="${BENCH_MUT_RUNS:-3}"
EVENTS="${BENCH_COLDSTART_EVENTS:-100000 1000000}"
RUNS="${BENCH_COLDSTART_RUNS:-3}"
HEAP_SEGMENTS="${BENCH_HEAP_SEGMENTS:-1000000}"
OUT="${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/rlmm-bench-compare.XXXXXX")}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rlmm-bench-work.XXXXXX")"
BROKER_DIR=""

log() { echo "bench-compare: $*" >&2; }
die() { log "$*"; exit 1; }

cleanup() {
	if [[ -n "$BROKER_DIR" ]]; then
		"$WORK/kafkatest" stop "$BROKER_DIR" >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

CP="$ROOT/test/interop/java/target/classes:$ROOT/test/interop/java/target/lib/*"
# java_driver OUTFILE JAVA_OPTS ARGS...: one KafkaRlmmDriver run, its JSON kept.
java_driver() {
	local out="$1" opts="$2"
	shift 2
	log "java: $*"
	# shellcheck disable=SC2086 # opts is a list of JVM flags.
	if ! java $opts -cp "$CP" org.rlmm.interop.KafkaRlmmDriver "$@" >"$out" 2>>"$OUT/java-stderr.log"; then
		cat "$out" >&2
		die "KafkaRlmmDriver $1 failed (stderr in $OUT/java-stderr.log)"
	fi
}

# go_bench OUTFILE ARGS...: one rlmmbench run, its JSON kept.
go_bench() {
	local out="$1"
	shift
	log "go: rlmmbench $*"
	if ! "$WORK/rlmmbench" "$@" >"$out"; then
		cat "$out" >&2
		die "rlmmbench $1 failed"
	fi
}

# fresh_broker: stops the current broker (if any) and starts a new one; sets B.
fresh_broker() {
	if [[ -n "$BROKER_DIR" ]]; then
		"$WORK/kafkatest" stop "$BROKER_DIR" >/dev/null 2>&1 || true
		rm -rf "$BROKER_DIR"
	fi
	BROKER_DIR="$WORK/kafka-$RANDOM$RANDOM"
	B="$("$WORK/kafkatest" start "$BROKER_DIR" --version 4.4.0 | sed -n 's/^RLMM_KAFKA_BOOTSTRAP=//p')"
	[[ -n "$B" ]] || die "kafkatest start printed no bootstrap address"
	log "broker at $B"
}

log "results in $OUT"
go build -o "$WORK/kafkatest" ./test/kafkatest/cmd/kafkatest
"$WORK/kafkatest" fetch --version 4.4.0 >/dev/null
bash scripts/interop.sh build
go build -o "$WORK/rlmmbench" ./test/interop/cmd/rlmmbench
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	cat /proc/loadavg
} >"$OUT/started.txt"
java -version 2>"$OUT/java-version.txt" || true
go version >"$OUT/go-version.txt"

# 1. Mutations, in rounds on one broker: each round runs both sides at 1 and at
# 16 callers, Java first in odd rounds and rlmm first in even ones. Each run
# first copies untimed for MUT_WARMUP_S seconds with all its callers, the same
# time for both sides (a fresh broker is 2-3x slower at a load it has not run yet).
fresh_broker
warm=(--warmup 50 --warmup-seconds "$MUT_WARMUP_S")
mut_java() { # CALLERS COUNT ROUND
	java_driver "$OUT/java-mut-$1-$3.json" "-Xmx1g" bench-mutations --bootstrap "$B" --callers "$1" --count "$2" "${warm[@]}"
}
mut_go() { # CALLERS COUNT ROUND
	go_bench "$OUT/go-mut-$1-$3.json" mutations --bootstrap "$B" --callers "$1" --count "$2" "${warm[@]}"
}
for r in $(seq 1 "$MUT_RUNS"); do
	for c in 1 16; do
		count="$MUT1"
		[[ "$c" == 16 ]] && count="$MUT16"
		if ((r % 2 == 1)); then
			mut_java "$c" "$count" "$r"
			mut_go "$c" "$count" "$r"
		else
			mut_go "$c" "$count" "$r"
			mut_java "$c" "$count" "$r"
		fi
	done
done

# 2. Cold start, one fresh broker per event count.
TOPIC_ID=AAAAAAAAAAEAAAAAAAAAAg
for n in $EVENTS; do
	fresh_broker
	java_driver "$OUT/fill-$n.json" "-Xmx2g" fill --bootstrap "$B" --events "$n" --topic rlmm-coldstart --topic-id "$TOPIC_ID"
	# The snapshot rlmm restarts from, written once after a full replay.
	snap="$WORK/snapshot-$n"
	go_bench "$OUT/go-snapprep-$n.json" coldstart --bootstrap "$B" --topic-id "$TOPIC_ID" --topic rlmm-coldstart \
		--user-partitions 50 --snapshot-dir "$snap" --prepare
	cold_java() { # ROUND
		java_driver "$OUT/java-cold-$n-$1.json" "-Xmx2g" bench-coldstart --bootstrap "$B" --topic-id "$TOPIC_ID" \
			--topic rlmm-coldstart --user-partitions 50
	}
	cold_go() { # ROUND: from scratch, then from the snapshot
		go_bench "$OUT/go-scratch-$n-$1.json" coldstart --bootstrap "$B" --topic-id "$TOPIC_ID" --topic rlmm-coldstart --user-partitions 50
		go_bench "$OUT/go-snap-$n-$1.json" coldstart --bootstrap "$B" --topic-id "$TOPIC_ID" --topic rlmm-coldstart \
			--user-partitions 50 --snapshot-dir "$snap"
	}
	for r in $(seq 1 "$RUNS"); do
		if ((r % 2 == 1)); then
			cold_java "$r"
			cold_go "$r"
		else
			cold_go "$r"
			cold_java "$r"
		fi
	done
done
"$WORK/kafkatest" stop "$BROKER_DIR" >/dev/null 2>&1 || true
BROKER_DIR=""

# 3. Lookup with 10,000 segments in a partition (no broker).
java_driver "$OUT/java-lookup.json" "-Xmx1g" bench-lookup --segments 10000
log "go: go test -bench BenchmarkSegmentForOffset/(copy-1partition|copy|into) ./memory"
go test -run '^$' -bench 'BenchmarkSegmentForOffset$/^(copy-1partition|copy|into)$' -benchmem -count 5 ./memory/ >"$OUT/go-lookup.txt"

# 4. Heap per live segment.
java_driver "$OUT/java-heap.json" "-Xmx6g" bench-heap --segments "$HEAP_SEGMENTS" --partitions 100
log "go: go test -bench BenchmarkRetainedHeap/100x10000 ./memory"
go test -run '^$' -bench 'BenchmarkRetainedHeap/100x10000$' -benchtime 1x -count 3 ./memory/ >"$OUT/go-heap.txt"

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	cat /proc/loadavg
} >"$OUT/finished.txt"

# The tables.
report_args=(report --dir "$OUT" --events "$EVENTS" --runs "$RUNS" --mut-runs "$MUT_RUNS" --mut1 "$MUT1" --mut16 "$MUT16" --heap-segments "$HEAP_SEGMENTS")
if [[ "${BENCH_WRITE:-1}" == 1 ]]; then
	report_args+=(--benchmarks "$ROOT/docs/bench/compare.md")
fi
"$WORK/rlmmbench" "${report_args[@]}" | tee "$OUT/tables.md"
log "raw results kept in $OUT"

# 5. The broker workload (Kafka 4.3.1 + tiered storage, Kafka's RLMM vs rlmm's
# plugin): its own script, tables in docs/bench/broker.md. BENCH_BROKER=0 skips it.
if [[ "${BENCH_BROKER:-1}" == 1 ]]; then
	BENCH_OUT="$OUT/broker" bash scripts/bench-broker.sh
fi
