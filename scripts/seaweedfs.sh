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
PROBE="$HOME_DIR/probe"
START_TIMEOUT_S="${SEAWEEDFS_START_TIMEOUT:-60}"
STOP_TIMEOUT_S=20

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
