#!/usr/bin/env bash
# Runs Apache Kafka's own tiered-storage integration suite (kafka-storage 4.3.1's test jar, package
# org.apache.kafka.tiered.storage.integration: 17 classes, 74 runs) from test/kafkasuite/ with a chosen RLMM.
#
#   scripts/kafkasuite.sh rlmm [-- MVN...]  every class with rlmm's broker plugin (make kafka-suite)
#   scripts/kafkasuite.sh kafka [-- MVN...] every class with Kafka's own RLMM (make kafka-suite-control)
#   scripts/kafkasuite.sh one CLASS [RLMM] [-- MVN...]  one class (simple name, e.g. DeleteTopicTest),
#                                           RLMM rlmm (default) or kafka (make kafka-suite-one CLASS=...)
#   scripts/kafkasuite.sh summary [RLMM]    per-class counts and times of the last run
#   scripts/kafkasuite.sh table [KDIR RDIR] one markdown row per run, both RLMMs side by side (the
#                                           table of docs/COMPATIBILITY.md), from the last runs' reports
#   scripts/kafkasuite.sh skip              what make test runs first for RLMM_SKIP_KAFKA_SUITE=1: says so, or
#                                           fails under CI, where the suite may not be skipped
#   scripts/kafkasuite.sh gate [RLMM]       after a full run: exit 0 when Kafka's 32 scenario and 42
#                                           transaction runs all ran, none skipped or rerun, and every failing
#                                           one matches a line of test/kafkasuite/known-failures.txt, its evidence
#                                           in its own output included (scripts/kafkasuite_gate.py), 1 otherwise
#
# `rlmm` (make kafka-suite, and make test) ends with the gate: a failure whose cause is known and
# shown in the run's own output (docs/COMPATIBILITY.md) is reported, not hidden, and any
# other failure, or fewer than 74 runs, fails the command.
#
# The rlmm run builds the plugin's shaded jar, with the rlmm binaries it carries, first (scripts/plugin.sh
# build); no run is ever retried (no Surefire reruns), and the gate refuses reports that have any.
# Reports: test/kafkasuite/target/reports-<rlmm|kafka>/ (TEST-*.xml, and *-output.txt with the brokers' logs).
# Maven arguments after `--` are added to the run (e.g. -Dsurefire.timeout=...; reruns refused);
# -Dsuite.rlmm.binary=PATH makes the plugins run that rlmm binary instead of their jar's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULE="$ROOT/test/kafkasuite"

log() { echo "kafkasuite.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# plugin_args prints the -D settings of the rlmm run: the plugin's jar and class. The plugins run the
# rlmm binary their jar carries (extracted into each broker's <log.dir>.rlmm), as a broker installed
# by README's four settings does; -Dsuite.rlmm.binary=PATH after `--` names another binary instead.
plugin_args() {
	command -v go >/dev/null || die "go not found"
	local jar=""
	if [[ -f "$ROOT/scripts/plugin.sh" ]]; then
		log "building the broker plugin (scripts/plugin.sh build)"
		jar="$(bash "$ROOT/scripts/plugin.sh" build | tail -1)" || die "scripts/plugin.sh build failed"
	else
		log "building the broker plugin (mvn package in plugin/)"
		mvn -B -q -f "$ROOT/plugin/pom.xml" clean package -DskipTests >&2 || die "maven build of plugin/ failed"
	fi
	if [[ -z "$jar" ]]; then
		jar="$(ls -t "$ROOT"/plugin/target/rlmm-plugin-*.jar 2>/dev/null | head -1 || true)"
	fi
	[[ -n "$jar" && -f "$jar" ]] || die "no plugin jar found under plugin/target"
	printf '%s\n' "-Dsuite.plugin.jar=$jar" \
		"-Dsuite.plugin.class=org.rlmm.plugin.RlmmRemoteLogMetadataManager" \
		"-Dsuite.plugin.binary.setting=rlmm.serve.binary"
}

# run RLMM [TESTS] [MVN...]: one run of the suite, the Maven arguments MVN added.
run() {
	local rlmm="$1" tests="${2:-}"
	shift $(($# < 2 ? $# : 2))
	local extra=("$@")
	local args=(-B -f "$MODULE/pom.xml" test "-Dsuite.rlmm=$rlmm")
	if [[ "$rlmm" == rlmm ]]; then
		local settings a
		settings="$(plugin_args)" || exit 1
		while IFS= read -r a; do args+=("$a"); done <<<"$settings"
	fi
	if [[ -n "$tests" ]]; then
		args+=("-Dtest=$tests")
	else
		rm -rf "$MODULE/target/reports-$rlmm" # a full run's reports are that run's only
	fi
	# Every run runs once: a failure is a failure, never retried until it passes (the pom pins
	# rerunFailingTestsCount to 0 as well, and the gate refuses a report with reruns).
	case " ${extra[*]} " in
	*rerunFailingTestsCount*) die "the Maven arguments ask Surefire for reruns: refused (each of Kafka's runs runs once)" ;;
	esac
	args+=("${extra[@]}")
	log "mvn ${args[*]}"
	local started rc=0
	started="$(date +%s)"
	mvn "${args[@]}" || rc=$?
	log "$rlmm run took $(($(date +%s) - started)) s (exit $rc)"
	summary "$rlmm" || true
	return "$rc"
}

# summary prints one line per class: runs, passed, failed, errors, skipped, seconds.
summary() {
	local dir="$MODULE/target/reports-${1:-rlmm}"
	[[ -d "$dir" ]] || die "no reports in $dir"
	python3 - "$dir" <<'PY'
import glob, os, sys
import xml.etree.ElementTree as ET
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "TEST-*.xml"))):
    s = ET.parse(f).getroot()
    n = int(s.get("tests")); fl = int(s.get("failures")); er = int(s.get("errors")); sk = int(s.get("skipped"))
    rows.append((s.get("name").rsplit(".", 1)[-1], n, n - fl - er - sk, fl, er, sk, float(s.get("time"))))
print(f"{'class':48} {'runs':>4} {'pass':>4} {'fail':>4} {'err':>4} {'skip':>4} {'seconds':>8}")
for r in rows:
    print(f"{r[0]:48} {r[1]:4} {r[2]:4} {r[3]:4} {r[4]:4} {r[5]:4} {r[6]:8.1f}")
t = [sum(r[i] for r in rows) for i in range(1, 6)]
print(f"{'total':48} {t[0]:4} {t[1]:4} {t[2]:4} {t[3]:4} {t[4]:4} {sum(r[6] for r in rows):8.1f}")
PY
}

# table prints a markdown row per run: class, run, result and time with Kafka's RLMM and with rlmm's.
# Runs are matched by class, method and their order within the method (Surefire names a run by its
# display name, e.g. "executeTieredStorageTest(String).groupProtocol=classic", or older reports "[1]").
table() {
	python3 - "${1:-$MODULE/target/reports-kafka}" "${2:-$MODULE/target/reports-rlmm}" <<'PY'
import glob, os, re, sys
import xml.etree.ElementTree as ET
def load(d):
    runs = {}
    for f in sorted(glob.glob(os.path.join(d, "TEST-*.xml"))):
        s = ET.parse(f).getroot()
        cls = s.get("name").rsplit(".", 1)[-1]
        if cls == "SuiteCoverageTest":
            continue  # this module's own check, not one of Kafka's runs
        seen = {}
        for tc in s.iter("testcase"):
            name = tc.get("name")
            method = re.split(r"[(\[]", name, 1)[0]
            seen[method] = seen.get(method, 0) + 1
            if tc.find("failure") is not None or tc.find("error") is not None:
                res = "FAIL"
            elif tc.find("skipped") is not None:
                res = "skip"
            else:
                res = "pass"
            runs[(cls, method, seen[method])] = (name, res, float(tc.get("time") or 0))
    return runs
k, r = load(sys.argv[1]), load(sys.argv[2])
def label(key):
    for src in (r, k):
        if key in src and " " in src[key][0]:  # "method(sig) display name"
            n = src[key][0]
            return n.rsplit("] ", 1)[-1] if "] " in n else n.rsplit(").", 1)[-1]
    return "#%d" % key[2]
print("| class | method | run | Kafka's RLMM | s | rlmm | s |")
print("|---|---|---|---|---:|---|---:|")
for key in sorted(set(k) | set(r)):
    kk = k.get(key); rr = r.get(key)
    print("| %s | %s | %s | %s | %s | %s | %s |" % (key[0], key[1], label(key),
          kk[1] if kk else "not run", "%.1f" % kk[2] if kk else "",
          rr[1] if rr else "not run", "%.1f" % rr[2] if rr else ""))
PY
}

# gate checks the last full run's reports against test/kafkasuite/known-failures.txt.
gate() {
	local dir="$MODULE/target/reports-${1:-rlmm}"
	[[ -d "$dir" ]] || die "no reports in $dir"
	python3 "$ROOT/scripts/kafkasuite_gate.py" "$dir" "$MODULE/known-failures.txt"
}

# skip is what make test runs, right after lint, when RLMM_SKIP_KAFKA_SUITE=1: a skip, saying so, on a
# developer's machine; an error under CI (CI set, and not false or 0), where the suite is the verdict on
# the plugin against Kafka's own tests and may not be left out.
skip() {
	case "${CI:-}" in
	"" | false | 0)
		echo "kafka suite skipped: RLMM_SKIP_KAFKA_SUITE=1 (make kafka-suite runs it; refused under CI)"
		;;
	*)
		log "RLMM_SKIP_KAFKA_SUITE=1 is refused under CI (CI=$CI): Kafka's tiered-storage suite is part of the verdict"
		exit 1
		;;
	esac
}

# mvn_args ARGS...: the arguments after the first `--` (none without one).
mvn_args() {
	while (($# > 0)) && [[ "$1" != -- ]]; do shift; done
	(($# > 0)) && shift
	(($# == 0)) || printf '%s\n' "$@"
}
mapfile -t MVN_EXTRA < <(mvn_args "$@")

case "${1:-}" in
skip) skip ;;
rlmm)
	# mvn's own exit status is not the verdict: the gate is (it also fails when runs are missing).
	run rlmm "" "${MVN_EXTRA[@]}" || log "maven reported failures; the gate decides which are known"
	gate rlmm
	;;
kafka) run kafka "" "${MVN_EXTRA[@]}" ;;
one)
	[[ -n "${2:-}" && "$2" != -- ]] || die "usage: $0 one CLASS [rlmm|kafka] [-- MVN...]"
	rlmm=rlmm
	[[ -n "${3:-}" && "$3" != -- ]] && rlmm="$3"
	run "$rlmm" "$2" "${MVN_EXTRA[@]}"
	;;
summary) summary "${2:-rlmm}" ;;
gate) gate "${2:-rlmm}" ;;
table) table "${2:-}" "${3:-}" ;;
*) die "usage: $0 rlmm | kafka | one CLASS [rlmm|kafka] | summary [rlmm|kafka] | table | gate [rlmm|kafka] | skip" ;;
esac
