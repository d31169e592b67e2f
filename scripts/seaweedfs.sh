#!/usr/bin/env bash
# Runs a real S3-compatible server (SeaweedFS, Apache-2.0, written in Go) on
# 127.0.0.1 for the S3 tests of the scrub packages. SeaweedFS has no release
# the Go proxy can `go install` (its go.mod has a replace directive), so
# `fetch` builds it from a throwaway module and caches the binary.
#
#   scripts/seaweedfs.sh fetch          build weed into the cache (idempotent;
#                                       ~7 min on 2 cores the first time)
#   scripts/seaweedfs.sh start <dir>    start `weed server -s3` with its data,
#                                       config, log and pid in <dir>; prints
#                                       RLMM_S3_ENDPOINT=http://127.0.0.1:PORT,
#                                       RLMM_S3_ACCESS_KEY=... and
#                                       RLMM_S3_SECRET_KEY=... on stdout
#   scripts/seaweedfs.sh stop <dir>     SIGTERM, then SIGKILL after a timeout
#
# The server requires credentials (an -s3.config identity file written by
# start), so tests can check that wrong ones are refused.
#
# Environment: RLMM_CACHE (default ~/.cache/rlmm) holds the binary;
# SEAWEEDFS_START_TIMEOUT (default 60, seconds).
set -euo pipefail

SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${RLMM_CACHE:-$HOME/.cache/rlmm}"
HOME_DIR="$CACHE/seaweedfs-$SEAWEEDFS_VERSION"
WEED="$HOME_DIR/weed"
# test/kafkatest's command, for its free ports.
PORTS_CMD="$HOME_DIR/kafkatest"
START_TIMEOUT_S="${SEAWEEDFS_START_TIMEOUT:-60}"
STOP_TIMEOUT_S=10

log() { echo "seaweedfs.sh: $*" >&2; }
die() { log "$*"; exit 1; }

fetch() {
	if [[ -x "$WEED" && -f "$HOME_DIR/.complete" ]]; then
		return 0
	fi
	command -v go >/dev/null || die "go not found"
	mkdir -p "$HOME_DIR"
	local mod="$HOME_DIR/build.$$"
	rm -rf "$mod"
	mkdir -p "$mod"
	log "building github.com/seaweedfs/seaweedfs/weed@$SEAWEEDFS_VERSION into $WEED (several minutes)"
	(
		cd "$mod"
		go mod init rlmm-seaweedfs-build >/dev/null 2>&1
		GOFLAGS=-mod=mod go get "github.com/seaweedfs/seaweedfs/weed@$SEAWEEDFS_VERSION" >&2
		GOFLAGS=-mod=mod go build -o "$WEED.tmp" github.com/seaweedfs/seaweedfs/weed >&2
	) || {
		rm -rf "$mod" "$WEED.tmp"
		die "building weed failed (see the output above)"
	}
	mv "$WEED.tmp" "$WEED"
	rm -rf "$mod"
	touch "$HOME_DIR/.complete"
}

build_ports_cmd() {
	mkdir -p "$HOME_DIR"
	(cd "$ROOT" && go build -o "$PORTS_CMD" ./test/kafkatest/cmd/kafkatest)
}

running_pid() {
	local dir="$1" pid
	[[ -f "$dir/pid" ]] || return 1
	pid="$(cat "$dir/pid")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	# A stale pid file may name a pid the system gave to another process.
	grep -q 'weed' "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

configure() {
	local dir="$1" access secret
	access="rlmm$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
	secret="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
	mkdir -p "$dir/data"
	cat >"$dir/s3.json" <<JSON
{"identities": [{"name": "rlmm", "credentials": [{"accessKey": "$access", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
	mapfile -t ports < <("$PORTS_CMD" ports 8)
	printf '%s\n' "${ports[@]}" >"$dir/ports"
	printf 'RLMM_S3_ACCESS_KEY=%s\nRLMM_S3_SECRET_KEY=%s\n' "$access" "$secret" >"$dir/credentials"
}

start() {
	local dir="$1"
	command -v curl >/dev/null || die "curl not found (apt-get install curl): start uses it to wait for the S3 port"
	fetch
	build_ports_cmd
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if pid="$(running_pid "$dir")"; then
		die "a SeaweedFS server is already running in $dir (pid $pid)"
	fi
	[[ -f "$dir/s3.json" ]] || configure "$dir"
	local p
	mapfile -t p <"$dir/ports"
	# setsid: the server outlives this script and is stopped only by `stop`.
	# The AWS_* variables are unset: weed would make them an admin identity.
	# Every bucket is a collection with volumes of its own: -volume.max=0
	# sizes the volume count from the free disk (small volumes, created as
	# buckets need them).
	setsid nohup env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$WEED" -logdir="$dir" server \
		-ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$dir/data" -volume.max=0 -master.volumeSizeLimitMB=64 \
		-master.telemetry=false -master.port="${p[0]}" -master.port.grpc="${p[1]}" \
		-volume.port="${p[2]}" -volume.port.grpc="${p[3]}" -filer -filer.port="${p[4]}" -filer.port.grpc="${p[5]}" \
		-s3 -s3.port="${p[6]}" -s3.port.grpc="${p[7]}" -s3.port.iceberg=0 -s3.port.lance=0 \
		-s3.config="$dir/s3.json" -s3.autoCreateBucket=false \
		>>"$dir/weed.log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
	local endpoint="http://127.0.0.1:${p[6]}" waited=0
	# Ready when the S3 port answers HTTP (403 without credentials).
	until curl -s -o /dev/null -m 2 "$endpoint/"; do
		if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
			tail -n 30 "$dir/weed.log" >&2 || true
			die "weed exited during start (log: $dir/weed.log)"
		fi
		if ((waited >= START_TIMEOUT_S * 2)); then
			tail -n 30 "$dir/weed.log" >&2 || true
			stop "$dir" || true
			die "SeaweedFS did not answer on $endpoint within ${START_TIMEOUT_S}s"
		fi
		sleep 0.5
		waited=$((waited + 1))
	done
	echo "RLMM_S3_ENDPOINT=$endpoint"
	cat "$dir/credentials"
}

stop() {
	local dir="$1" pid
	if ! pid="$(running_pid "$dir")"; then
		rm -f "$dir/pid"
		log "no SeaweedFS server running in $dir"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	local waited=0
	while kill -0 "$pid" 2>/dev/null; do
		if ((waited >= STOP_TIMEOUT_S * 10)); then
			log "weed pid $pid ignored SIGTERM for ${STOP_TIMEOUT_S}s: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$dir/pid"
	# The Unix sockets weed opens beside its gRPC ports (left behind by a
	# SIGKILL).
	local p
	for p in $(cat "$dir/ports" 2>/dev/null); do
		rm -f /tmp/seaweedfs-*-"$p".sock
	done
}

cmd="${1:-}"
case "$cmd" in
fetch) fetch ;;
start | stop)
	[[ $# -eq 2 ]] || die "usage: $0 $cmd <dir>"
	"$cmd" "$2"
	;;
*) die "usage: $0 fetch | start <dir> | stop <dir>" ;;
esac
