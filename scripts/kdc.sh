#!/usr/bin/env bash
# A throwaway MIT Kerberos KDC on 127.0.0.1 for the GSSAPI tests
# (scripts/gssapi-test.sh): Debian's krb5-kdc, its own realm, database,
# configuration and port, nothing of the system's /etc/krb5* touched.
#
#   scripts/kdc.sh install       install krb5-kdc krb5-admin-server krb5-user with apt-get when
#                                krb5kdc, kdb5_util, kadmin.local or kinit is missing (needs root);
#                                exit 3 when they are missing and cannot be installed
#   scripts/kdc.sh start <dir>   the first time: a realm (RLMM.TEST) with a random master key, the
#                                principals kafka/127.0.0.1, kafka/localhost (the broker's, in
#                                <dir>/broker.keytab) and rlmm (the client's, in <dir>/client.keytab);
#                                then starts krb5kdc on a free loopback port (TCP and UDP), checks
#                                with kinit that the client's keytab logs in, and prints
#                                RLMM_KRB5_CONF=<dir>/krb5.conf, RLMM_KDC_DIR=<dir> and
#                                RLMM_KRB5_REALM=RLMM.TEST
#   scripts/kdc.sh stop <dir>    SIGTERM, then SIGKILL after 10 s
#
# Files of <dir> (mode 600; <dir> 700): krb5.conf (clients: the realm, its KDC, TCP only),
# kdc.conf (the KDC's profile), principal* (the database), stash, *.keytab, kdc.log, pid, realm.
# KDC_START_TIMEOUT [30] seconds bounds the wait for the KDC to answer.
set -euo pipefail

REALM=RLMM.TEST
START_TIMEOUT_S="${KDC_START_TIMEOUT:-30}"

log() { echo "kdc.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}

have_tools() {
	local t
	for t in krb5kdc kdb5_util kadmin.local kinit; do
		command -v "$t" >/dev/null 2>&1 || [[ -x "/usr/sbin/$t" ]] || return 1
	done
}

install() {
	have_tools && return 0
	if [[ "$(id -u)" != 0 ]]; then
		log "krb5kdc, kdb5_util, kadmin.local or kinit is missing and this is not root: install krb5-kdc krb5-admin-server krb5-user"
		exit 3
	fi
	command -v apt-get >/dev/null || {
		log "krb5kdc is missing and there is no apt-get: install MIT Kerberos' KDC (krb5-kdc) and its tools"
		exit 3
	}
	log "installing krb5-kdc krb5-admin-server krb5-user (apt-get)"
	apt-get update -qq >&2 || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q krb5-kdc krb5-admin-server krb5-user >&2 ||
		die "apt-get install krb5-kdc krb5-admin-server krb5-user failed"
	have_tools || die "the krb5 packages are installed, but krb5kdc, kdb5_util, kadmin.local or kinit is still missing"
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running_pid() {
	local dir="$1" pid
	[[ -f "$dir/pid" ]] || return 1
	pid="$(cat "$dir/pid")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	grep -q krb5kdc "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

# configure DIR: the realm's files, database, principals and keytabs.
configure() {
	local dir="$1" port
	port="$(free_port)"
	cat >"$dir/krb5.conf" <<EOF
# The test realm of scripts/kdc.sh (clients: rlmm, the Kafka broker's JVM).
[libdefaults]
	default_realm = $REALM
	dns_lookup_realm = false
	dns_lookup_kdc = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	renew_lifetime = 2h
	forwardable = false

[realms]
	$REALM = {
		kdc = 127.0.0.1:$port
	}

[domain_realm]
	127.0.0.1 = $REALM
	localhost = $REALM
EOF
	cat >"$dir/kdc.conf" <<EOF
[kdcdefaults]
	kdc_listen = 127.0.0.1:$port
	kdc_tcp_listen = 127.0.0.1:$port

[realms]
	$REALM = {
		database_name = $dir/principal
		key_stash_file = $dir/stash
		acl_file = $dir/kadm5.acl
		max_life = 1h
		max_renewable_life = 2h
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:$dir/kdc.log
	default = FILE:$dir/kdc.log
EOF
	: >"$dir/kadm5.acl"
	echo "$REALM" >"$dir/realm"
	echo "$port" >"$dir/port"
	# The master key's password is random and only ever in the stash file.
	kdb5_util -r "$REALM" create -s -P "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/setup.log" 2>&1 ||
		{
			cat "$dir/setup.log" >&2
			die "kdb5_util create failed"
		}
	local p
	for p in kafka/127.0.0.1 kafka/localhost rlmm; do
		kadmin.local -r "$REALM" -q "addprinc -randkey $p@$REALM" >>"$dir/setup.log" 2>&1 || die "adding principal $p failed"
	done
	kadmin.local -r "$REALM" -q "ktadd -k $dir/broker.keytab kafka/127.0.0.1@$REALM kafka/localhost@$REALM" >>"$dir/setup.log" 2>&1 ||
		die "writing broker.keytab failed"
	kadmin.local -r "$REALM" -q "ktadd -k $dir/client.keytab rlmm@$REALM" >>"$dir/setup.log" 2>&1 ||
		die "writing client.keytab failed"
	chmod 600 "$dir"/*
	touch "$dir/.complete"
}

start() {
	local dir="$1"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	chmod 700 "$dir"
	have_tools || die "krb5kdc is not installed: run scripts/kdc.sh install (as root)"
	PATH="$PATH:/usr/sbin"
	export KRB5_CONFIG="$dir/krb5.conf" KRB5_KDC_PROFILE="$dir/kdc.conf"
	if [[ ! -f "$dir/.complete" ]]; then
		rm -rf "${dir:?}"/*
		configure "$dir"
	fi
	local pid
	if ! pid="$(running_pid "$dir")"; then
		# -n: stay in the foreground (setsid detaches it from this script).
		setsid nohup krb5kdc -n -r "$REALM" >>"$dir/kdc.out" 2>&1 </dev/null &
		echo $! >"$dir/pid"
	fi
	# Ready when the client's keytab gets a ticket (bounded).
	local ccache="$dir/probe.ccache" waited=0
	until KRB5CCNAME="FILE:$ccache" timeout 5 kinit -k -t "$dir/client.keytab" "rlmm@$REALM" 2>>"$dir/kinit.log"; do
		if ! running_pid "$dir" >/dev/null; then
			tail -n 20 "$dir/kdc.out" "$dir/kdc.log" >&2 || true
			die "krb5kdc exited"
		fi
		if ((waited >= START_TIMEOUT_S * 10)); then
			tail -n 20 "$dir/kdc.log" "$dir/kinit.log" >&2 || true
			die "the KDC did not issue a ticket within ${START_TIMEOUT_S}s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$ccache"
	echo "RLMM_KRB5_CONF=$dir/krb5.conf"
	echo "RLMM_KDC_DIR=$dir"
	echo "RLMM_KRB5_REALM=$REALM"
}

stop() {
	local dir="$1" pid waited=0
	[[ -d "$dir" ]] || return 0
	pid="$(running_pid "$dir")" || {
		rm -f "$dir/pid"
		return 0
	}
	kill -TERM "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do
		if ((waited >= 100)); then
			kill -KILL "$pid" 2>/dev/null || true
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$dir/pid"
}

case "${1:-}" in
install) install ;;
start)
	[[ $# -eq 2 ]] || die "usage: $0 start <dir>"
	start "$2"
	;;
stop)
	[[ $# -eq 2 ]] || die "usage: $0 stop <dir>"
	stop "$2"
	;;
*) die "usage: $0 install | start <dir> | stop <dir>" ;;
esac
