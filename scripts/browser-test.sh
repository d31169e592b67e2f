#!/usr/bin/env bash
# The console's browser test (make test runs it; alone: bash scripts/browser-test.sh):
# `rlmm console` on a known partition, loaded in a real headless Chromium, its timeline
# checked from the DOM and a screenshot saved (test/browser).
#
#   1. Debian's chromium, installed with apt-get when missing and this is root
#      (scripts/chromium.sh install);
#   2. go test ./test/browser/: the console on an embedded log, and, when
#      RLMM_KAFKA_BOOTSTRAP names a broker (make test's), on a metadata topic of it.
#
# The screenshots go to the temporary directory (bash scripts/browser-test.sh -screenshots DIR
# puts them in DIR; the arguments go to the test binary); the test prints their paths. When Chromium is missing and cannot be installed the test is
# skipped with the reason, except under CI=true, where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "browser-test.sh: $*" >&2; }

rc=0
bash scripts/chromium.sh install || rc=$?
if ((rc == 3)); then
	if [[ "${CI:-}" == true ]]; then
		log "FAIL: Chromium is not installed and cannot be installed here (CI=true: the browser test must run)"
		exit 1
	fi
	log "SKIP: the browser test does not run: Chromium is not installed and cannot be installed here (needs root and apt-get)"
	exit 0
elif ((rc != 0)); then
	exit "$rc"
fi
chromium="$(bash scripts/chromium.sh path)"
log "$("$chromium" --version 2>/dev/null || echo "$chromium")"
go test -count=1 -timeout 10m -v ./test/browser/ -args "$@"
