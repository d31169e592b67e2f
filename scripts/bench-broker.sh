#!/usr/bin/env bash
# The broker workload of `make bench-compare` (also `make bench-broker`): Kafka
# 4.3.1 brokers with tiered storage (LocalTieredStorage), Kafka's own
# TopicBasedRemoteLogMetadataManager against rlmm's plugin, a fresh broker per
# run (test/broker/cmd/brokerbench):
#   1. restart to the first remote fetch served, after N metadata events in the
#      metadata partition of the tiered partition (wire-encoded, written first);
#      and its floor, `none`: the same restart with tiered storage off;
#   2. per copied segment the COPY_SEGMENT_STARTED-to-FINISHED span, and
#      segments copied per second, under a produce load.
# Writes the tables into docs/bench/broker.md between
#   <!-- bench-broker:begin --> and <!-- bench-broker:end -->
#
# `scripts/bench-broker.sh memory` runs instead the per-broker memory workload
# (brokerbench memory) on clusters of several brokers, Kafka's RLMM and rlmm's
# plugin for each layout, and writes its table between
#   <!-- bench-broker-memory:begin --> and <!-- bench-broker-memory:end -->
#   BENCH_MEMORY_CONFIGS ["3:1:30 3:2:30 3:2:60 2:2:30"]  brokers:rf:partitions of each run
#   BENCH_MEMORY_SEGMENTS [4000]    finished remote segments per partition
#   BENCH_MEMORY_NOTE               a sentence for the table's text (the code measured, the load)
#
# `scripts/bench-broker.sh curve` (`make bench-curve`) runs instead the restart
# curve (brokerbench curve, once per event count): per event count one tiered
# broker prepared once and restarted with Kafka's RLMM and rlmm's plugin in
# turns, and one broker without tiered storage (the floor), then writes its
# table between
#   <!-- bench-broker-curve:begin --> and <!-- bench-broker-curve:end -->
# and its plot into docs/bench/restart-curve.svg (with BENCH_WRITE=0: into
# $BENCH_OUT only).
#   BENCH_CURVE_EVENTS ["1000000 10000000 30000000"]  event counts
#   BENCH_BROKER_RUNS [3]           timed restarts per mode and event count
#   BENCH_CURVE_HEAP [1g]           every broker's heap (see docs/bench/broker.md)
#   BROKERBENCH_DIR [the temp dir]  where the brokers' directories go (disk:
#                                   docs/bench/broker.md says how much)
#
# Environment (defaults in brackets):
#   BENCH_BROKER_EVENTS ["100000 1000000"]  event counts of the restart runs
#   BENCH_BROKER_MIB [100]          MiB produced by the copy run
#   BENCH_BROKER_PARTITIONS [4]     partitions of the copy run
#   BENCH_BROKER_RUNS [3]           restart runs per mode and event count (medians reported)
#   BENCH_OUT [a temp dir]          where the JSON results go (kept)
#   BENCH_WRITE [1]                 0: print the tables, do not edit docs/bench/broker.md
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EVENTS="${BENCH_BROKER_EVENTS:-100000 1000000}"
MIB="${BENCH_BROKER_MIB:-100}"
PARTS="${BENCH_BROKER_PARTITIONS:-4}"
RUNS="${BENCH_BROKER_RUNS:-3}"
OUT="${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/rlmm-bench-broker.XXXXXX")}"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rlmm-bench-broker-work.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log() { echo "bench-broker: $*" >&2; }

# The brokers' jars are resolved by brokerbench (test/kafkatest) at its first start.
JAR="$(bash scripts/plugin.sh build | tail -n1)"
# The sidecar as the jar carries it (scripts/plugin.sh: without S3, -tags rlmm_nos3).
go build -tags rlmm_nos3 -o "$WORK/rlmm" ./cmd/rlmm
go build -o "$WORK/brokerbench" ./test/broker/cmd/brokerbench
common=(--plugin-jar "$JAR" --rlmm-binary "$WORK/rlmm")

# bench OUTFILE ARGS...: one brokerbench run, its JSON kept.
bench() {
	local out="$1"
	shift
	log "brokerbench $*"
	if ! "$WORK/brokerbench" "$@" "${common[@]}" >"$out"; then
		cat "$out" >&2
		log "brokerbench $1 failed"
		exit 1
	fi
	cat "$out" >&2
}

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log "results in $OUT; load average $LOAD_START"
if [[ "${1:-}" == memory ]]; then
	CONFIGS="${BENCH_MEMORY_CONFIGS:-3:1:30 3:2:30 3:2:60 2:2:30}"
	SEGMENTS="${BENCH_MEMORY_SEGMENTS:-4000}"
	for conf in $CONFIGS; do
		IFS=: read -r nb rf np <<<"$conf"
		for mode in kafka rlmm; do
			bench "$OUT/memory-$mode-${conf//:/-}.json" memory --mode "$mode" --brokers "$nb" --rf "$rf" \
				--partitions "$np" --segments "$SEGMENTS"
		done
	done
	note="${BENCH_MEMORY_NOTE:-}"
	note+="${note:+ }Load average (1/5/15 min) $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (memory only: no timing is reported)."
	args=(memory-report --dir "$OUT" --configs "$CONFIGS" --note "$note")
	if [[ "${BENCH_WRITE:-1}" == 1 ]]; then
		args+=(--benchmarks "$ROOT/docs/bench/broker.md")
	fi
	"$WORK/brokerbench" "${args[@]}" | tee "$OUT/memory.md"
	log "raw results kept in $OUT"
	exit 0
fi
if [[ "${1:-}" == curve ]]; then
	CURVE_EVENTS="${BENCH_CURVE_EVENTS:-1000000 10000000 30000000}"
	CURVE_HEAP="${BENCH_CURVE_HEAP:-1g}"
	for n in $CURVE_EVENTS; do
		began=$SECONDS
		bench "$OUT/curve-$n.json" curve --events "$n" --runs "$RUNS" --heap "$CURVE_HEAP" --out "$OUT"
		log "curve: $n events took $((SECONDS - began)) s"
	done
	svg="$OUT/restart-curve.svg"
	args=(curve-report --dir "$OUT" --events "$CURVE_EVENTS" --runs "$RUNS" --heap "$CURVE_HEAP"
		--load "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end")
	if [[ "${BENCH_WRITE:-1}" == 1 ]]; then
		svg="$ROOT/docs/bench/restart-curve.svg"
		args+=(--benchmarks "$ROOT/docs/bench/broker.md")
	fi
	"$WORK/brokerbench" "${args[@]}" --svg "$svg" | tee "$OUT/curve.md"
	log "plot in $svg; raw results kept in $OUT"
	exit 0
fi
# The restart rows take RUNS turns of the three modes (a fresh broker each),
# so a slow minute of the machine falls on every mode alike, and each turn
# starts with another mode (kafka rlmm none, then rlmm none kafka, ...); the
# report takes the medians and the ranges.
modes=(kafka rlmm none)
for n in $EVENTS; do
	for r in $(seq 1 "$RUNS"); do
		for i in 0 1 2; do
			mode="${modes[$(((r - 1 + i) % 3))]}"
			bench "$OUT/restart-$mode-$n-$r.json" restart --mode "$mode" --events "$n"
		done
	done
done
for mode in kafka rlmm; do
	bench "$OUT/copy-$mode.json" copy --mode "$mode" --mib "$MIB" --partitions "$PARTS"
done

args=(report --dir "$OUT" --events "$EVENTS" --runs "$RUNS" --load "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end")
if [[ "${BENCH_WRITE:-1}" == 1 ]]; then
	args+=(--benchmarks "$ROOT/docs/bench/broker.md")
fi
"$WORK/brokerbench" "${args[@]}" | tee "$OUT/tables.md"
log "raw results kept in $OUT; load average $(cut -d' ' -f1-3 /proc/loadavg)"
