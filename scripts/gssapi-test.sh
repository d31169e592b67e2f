#!/usr/bin/env bash
# The GSSAPI test (make test runs it; alone: bash scripts/gssapi-test.sh):
# kafkalog over SASL_SSL with Kerberos against real parts, about a minute.
#
#   1. an MIT Kerberos KDC on 127.0.0.1 (scripts/kdc.sh: installs Debian's krb5-kdc
#      krb5-admin-server krb5-user when missing and this is root), realm RLMM.TEST, with the
#      principals and keytabs of the broker (kafka/127.0.0.1) and the client (rlmm);
#   2. a Kafka broker ($RLMM_KAFKA_VERSION, default 4.3.1) with a SASL_SSL listener that
#      takes GSSAPI and requires a client certificate (test/kafkatest's command:
#      kafkatest start DIR --security gssapi --kerberos-dir KDC): its own JAAS entry and krb5.conf;
#   3. the client's TLS stores made with the JDK's keytool from a certificate of the cluster's
#      CA: a JKS key store whose key has its own password (ssl.key.password), a PKCS12 key
#      store, a JKS and a PKCS12 trust store;
#   4. go test ./test/gssapi/: publish, subscribe and high-water marks
#      over GSSAPI+SASL_SSL with the JKS and with the PKCS12 stores, the refusals, and
#      `rlmm serve --properties` (the plugin's way) coming up over it with no password in
#      its /proc/<pid>/cmdline or environment.
#
# Everything lives in a temporary directory this script stops and removes. When a part is
# missing (no root to install the KDC, no java/keytool) the test is skipped with the
# reason, except under CI=true, where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "gssapi-test.sh: $*" >&2; }

cannot_run() {
	if [[ "${CI:-}" == true ]]; then
		log "FAIL: $* (CI=true: the GSSAPI test must run)"
		exit 1
	fi
	log "SKIP: the GSSAPI test does not run: $*"
	exit 0
}

for tool in java keytool python3 mvn; do
	command -v "$tool" >/dev/null || cannot_run "$tool not found"
done
rc=0
bash scripts/kdc.sh install || rc=$?
if ((rc == 3)); then
	cannot_run "MIT Kerberos' KDC is not installed and cannot be installed here (needs root and apt-get)"
elif ((rc != 0)); then
	exit "$rc"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/rlmm-gssapi.XXXXXX")
cleanup() {
	if [[ -x "$dir/kafkatest" && -d "$dir/kafka" ]]; then
		"$dir/kafkatest" stop "$dir/kafka" >/dev/null 2>&1 || true
	fi
	bash scripts/kdc.sh stop "$dir/kdc" || true
	rm -rf "$dir"
}
trap cleanup EXIT

eval "$(bash scripts/kdc.sh start "$dir/kdc" | grep '^RLMM_KRB5_')"
log "KDC for $RLMM_KRB5_REALM up ($RLMM_KRB5_CONF)"

version="${RLMM_KAFKA_VERSION:-4.3.1}"
go build -o "$dir/kafkatest" ./test/kafkatest/cmd/kafkatest || {
	log "go build ./test/kafkatest/cmd/kafkatest failed"
	exit 1
}
eval "$("$dir/kafkatest" start "$dir/kafka" --version "$version" --security gssapi --kerberos-dir "$dir/kdc" |
	grep -e '^RLMM_KAFKA_SECURE_BOOTSTRAP=' -e '^RLMM_KAFKA_SECURITY_DIR=')"
log "Kafka $version with a SASL_SSL GSSAPI listener at $RLMM_KAFKA_SECURE_BOOTSTRAP"

# The client's stores, from a certificate of the cluster's CA (mode 600, in a 700 directory).
stores="$dir/stores"
mkdir -m 700 "$stores"
(
	set -e
	umask 077
	cd "$stores"
	sec="$RLMM_KAFKA_SECURITY_DIR"
	# Random passwords; the client's key and certificate are the ones test/kafkatest made with Go's
	# crypto (client.p12 in the cluster's security directory); keytool, Java's own tool, writes every
	# store the test reads, so kafkalog is checked against stores as Java writes them. The passwords
	# go through files, never argv. The Go-made bundle names no alias, so keytool calls its entry 1.
	for f in store key trust; do
		od -An -tx1 -N12 /dev/urandom | tr -d ' \n' >"$f.password"
	done
	keytool -importkeystore -noprompt -srckeystore "$sec/client.p12" -srcstoretype PKCS12 \
		-srcstorepass:file "$sec/keystore.password" -srcalias 1 -destalias client -destkeystore client.jks \
		-deststoretype JKS -deststorepass:file store.password -destkeypass:file key.password 2>/dev/null
	keytool -importkeystore -noprompt -srckeystore "$sec/client.p12" -srcstoretype PKCS12 \
		-srcstorepass:file "$sec/keystore.password" -srcalias 1 -destalias client -destkeystore client.p12 \
		-deststoretype PKCS12 -deststorepass:file store.password 2>/dev/null
	for type in JKS PKCS12; do
		ext=jks
		[[ "$type" == PKCS12 ]] && ext=p12
		keytool -importcert -noprompt -alias cluster-ca -file "$sec/ca.pem" -keystore "trust.$ext" -storetype "$type" \
			-storepass:file trust.password >/dev/null 2>&1
	done
	cp "$RLMM_KRB5_CONF" krb5.conf
	cp "$dir/kdc/client.keytab" client.keytab
	echo "$RLMM_KRB5_REALM" >realm
) || {
	log "making the client's key and trust stores with keytool failed"
	exit 1
}

echo "$RLMM_KAFKA_SECURE_BOOTSTRAP" >"$stores/bootstrap"
go build -o "$stores/rlmm" ./cmd/rlmm || {
	log "go build ./cmd/rlmm failed"
	exit 1
}

status=0
go test -race -count=1 -timeout 5m -v ./test/gssapi/ -args -gssapi.dir="$stores" || status=$?
if ((status != 0)); then
	log "the broker's last lines:"
	tail -n 30 "$dir/kafka/node-1/broker.log" >&2 || true
	log "the KDC's last lines:"
	tail -n 20 "$dir/kdc/kdc.log" >&2 || true
fi
exit "$status"
