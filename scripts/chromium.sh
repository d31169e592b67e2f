#!/usr/bin/env bash
# Debian's Chromium for the console's browser test (test/browser).
#
#   scripts/chromium.sh install   install chromium with apt-get when no chromium binary is on PATH
#                                 (needs root); exit 3 when it is missing and cannot be installed
#   scripts/chromium.sh path      print the chromium binary's path (exit 3 when there is none)
#
# The test drives it over the DevTools protocol (chromedp), so chromium-driver is not needed.
set -euo pipefail

log() { echo "chromium.sh: $*" >&2; }

find_chromium() {
	local c
	for c in chromium chromium-browser; do
		if command -v "$c" >/dev/null; then
			command -v "$c"
			return 0
		fi
	done
	return 1
}

install() {
	if find_chromium >/dev/null; then
		return 0
	fi
	if [[ "$(id -u)" != 0 ]]; then
		log "chromium is missing and this is not root: install Debian's chromium package (apt-get install chromium)"
		exit 3
	fi
	command -v apt-get >/dev/null || {
		log "chromium is missing and there is no apt-get: install Chromium"
		exit 3
	}
	log "installing chromium (apt-get)"
	apt-get update -qq >&2 || { log "apt-get update failed"; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2 ||
		{ log "apt-get install chromium failed"; exit 1; }
	find_chromium >/dev/null || { log "the chromium package is installed, but no chromium binary is on PATH"; exit 1; }
}

case "${1:-}" in
install) install ;;
path) find_chromium || { log "no chromium on PATH (scripts/chromium.sh install)"; exit 3; } ;;
*)
	echo "usage: scripts/chromium.sh install|path" >&2
	exit 2
	;;
esac
