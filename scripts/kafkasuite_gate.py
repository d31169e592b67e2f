#!/usr/bin/env python3
"""The verdict on a full run of Kafka's tiered-storage suite with rlmm's plugin.

    kafkasuite_gate.py REPORTS_DIR KNOWN_FAILURES   exit 0 when all of Kafka's 74 runs ran and every
                                                    failing one is a known failure whose evidence is
                                                    in the run's own output; 1 otherwise
    kafkasuite_gate.py --self-test                  checks the gate and known-failures.txt on made-up
                                                    reports, one per rule

REPORTS_DIR holds Surefire's TEST-*.xml and, per class, the *-output.txt of the brokers' and the
clients' logs (kafkasuite/pom.xml redirects test output to files). KNOWN_FAILURES is
kafkasuite/known-failures.txt, whose header documents the format.

A known failure is matched on the failure itself, not only on the test's name: its class, method
and run (the display name, e.g. groupProtocol=consumer), the failure message, and, when the entry
asks for it, evidence in the class's output that the named cause happened. A line that matched no
failure is printed: the defect may be fixed (or the run was lucky), and the line may go.
"""

import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

KAFKA_RUNS = 74

# What the consumer of kafka-clients 4.3.1 logs (FetchCollector, DEBUG) when it drops a fetch
# response whose offset is not its position. A response below the position is the signature of
# KAFKA-15529: the background thread fetched an offset the application thread had just consumed.
STALE = re.compile(r"Discarding stale fetch response for partition (\S+) since its offset (\d+) "
                   r"does not match the expected offset FetchPosition\{offset=(\d+)")


def stale_refetches(output_path):
    """Counts, per topic-partition, the responses discarded at an offset below the position."""
    counts = {}
    if not os.path.exists(output_path):
        return counts
    with open(output_path, errors="replace") as f:
        for line in f:
            m = STALE.search(line)
            if m and int(m.group(2)) < int(m.group(3)):
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


EVIDENCE = {"-": None, "stale-refetch": stale_refetches}


class Known:
    """One line of known-failures.txt."""

    def __init__(self, lineno, line):
        fields = [f.strip() for f in line.split(" | ")]
        if len(fields) != 6:
            raise ValueError("line %d: want 6 fields separated by ' | ', have %d" % (lineno, len(fields)))
        cls, method, run, message, evidence, reason = fields
        if evidence not in EVIDENCE:
            raise ValueError("line %d: unknown evidence %r (known: %s)" % (lineno, evidence, ", ".join(EVIDENCE)))
        try:
            self.cls, self.method, self.run = re.compile(cls), re.compile(method), re.compile(run)
            self.message = re.compile(message)
        except re.error as e:
            raise ValueError("line %d: a field is not a regular expression: %s" % (lineno, e)) from None
        if evidence != "-" and not {"tp", "expected", "actual"} <= set(self.message.groupindex):
            raise ValueError("line %d: evidence %s needs the groups tp, expected and actual in the message"
                             % (lineno, evidence))
        self.evidence, self.reason, self.seen = evidence, reason, 0

    def label(self):
        return "%s %s %s" % (self.cls.pattern, self.method.pattern, self.run.pattern)


def load_known(path):
    known = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                known.append(Known(i, line))
    return known


def gate(reports, known_path, out=sys.stdout):
    known = load_known(known_path)
    if not os.path.isdir(reports):
        raise ValueError("no reports directory %s" % reports)
    runs, coverage_ok, failed = 0, False, []
    for f in sorted(glob.glob(os.path.join(reports, "TEST-*.xml"))):
        try:
            suite = ET.parse(f).getroot()
        except ET.ParseError as e:
            raise ValueError("%s: not a Surefire report: %s" % (f, e)) from None
        fqcn = suite.get("name")
        cls = fqcn.rsplit(".", 1)[-1]
        for tc in suite.iter("testcase"):
            bad = tc.find("failure")
            if bad is None:
                bad = tc.find("error")
            if cls == "SuiteCoverageTest":
                coverage_ok = bad is None
                continue
            runs += 1
            if bad is not None:
                failed.append((cls, fqcn, tc.get("name"), bad.get("message") or ""))

    unexpected, matched = [], []  # matched: (entry, class, name, tp or None, extra reads)
    for cls, fqcn, name, message in failed:
        method = re.split(r"[(\[]", name, 1)[0]
        for k in known:
            if not (k.cls.fullmatch(cls) and k.method.fullmatch(method) and k.run.search(name)):
                continue
            m = k.message.search(message)
            if not m:
                continue
            if k.evidence == "-":
                matched.append((k, fqcn, name, None, 0))
                break
            extra = int(m.group("actual")) - int(m.group("expected"))
            if extra > 0:
                matched.append((k, fqcn, name, m.group("tp"), extra))
                break
        else:
            unexpected.append((fqcn.rsplit(".", 1)[-1], name, message))

    # The evidence is weighed per class and partition, once all of that class's failures are counted.
    needed = {}  # (entry, class, partition) -> the extra reads its failures there add up to
    for k, fqcn, name, tp, extra in matched:
        if tp is not None:
            needed[(k, fqcn, tp)] = needed.get((k, fqcn, tp), 0) + extra
    found = {key: EVIDENCE[key[0].evidence](os.path.join(reports, key[1] + "-output.txt")).get(key[2], 0)
             for key in needed}
    for k, fqcn, name, tp, extra in matched:
        cls = fqcn.rsplit(".", 1)[-1]
        if tp is None:
            k.seen += 1
            print("KNOWN FAILURE (docs/COMPATIBILITY.md): %s %s: %s" % (cls, name, k.reason), file=out)
            continue
        found_here, needed_here = found[(k, fqcn, tp)], needed[(k, fqcn, tp)]
        if found_here >= needed_here:
            k.seen += 1
            print("KNOWN FAILURE (docs/COMPATIBILITY.md): %s %s: %s" % (cls, name, k.reason), file=out)
            print("  evidence (%s): %s's output shows %d such response(s) for %s, its failures %d extra read(s)"
                  % (k.evidence, cls, found_here, tp, needed_here), file=out)
        else:
            print("  NO EVIDENCE (%s) for %s %s: the output shows %d such response(s) for %s, its failures need %d"
                  % (k.evidence, cls, name, found_here, tp, needed_here), file=out)
            unexpected.append((cls, name, "looks like %s, but its cause is not in the output" % k.reason.split(":")[0]))

    for k in known:
        if k.seen == 0:
            print("known failure not seen in this run (fixed? then delete its line): %s: %s" % (k.label(), k.reason),
                  file=out)
    print("kafka suite with rlmm: %d runs, %d passed, %d known failures, %d unexpected failures"
          % (runs, runs - len(failed), sum(k.seen for k in known), len(unexpected)), file=out)
    for cls, name, message in unexpected:
        print("UNEXPECTED FAILURE: %s %s: %s" % (cls, name, message.splitlines()[0] if message else ""), file=out)
    if runs != KAFKA_RUNS:
        print("expected Kafka's %d runs, the reports hold %d" % (KAFKA_RUNS, runs), file=out)
    if not coverage_ok:
        print("SuiteCoverageTest did not pass: a class of Kafka's package has no wrapper, or it did not run", file=out)
    return 0 if runs == KAFKA_RUNS and coverage_ok and not unexpected else 1


SELF_TEST_MESSAGE = ("Expected FETCH_SEGMENT requests count from broker 0 to tiered storage for topic-partition "
                     "topicA-0 to be equal to 4, but actual count was 5. ==> expected: <4> but was: <5>")
# The line kafka-clients 4.3.1 logged in the failing run of docs/COMPATIBILITY.md's F3 (shortened).
SELF_TEST_STALE = ("13:27:34.113 DEBUG [main] o.a.k.c.c.i.FetchCollector: [Consumer clientId=consumer-group-2, "
                   "groupId=group] Discarding stale fetch response for partition topicA-0 since its offset %d does "
                   "not match the expected offset FetchPosition{offset=%d, offsetEpoch=Optional[0]} or the "
                   "partition has been unassigned\n")
SELF_TEST_CASES = [
    # name, passing runs, failures as (run, message), output of the failing class, exit status, lines it prints
    ("all pass", 74, [], "", 0, ["known failure not seen in this run"]),
    ("one run missing", 73, [], "", 1, ["expected Kafka's 74 runs, the reports hold 73"]),
    ("over-count with its evidence", 73, [("groupProtocol=consumer", SELF_TEST_MESSAGE)], SELF_TEST_STALE % (2, 3), 0,
     ["KNOWN FAILURE", "evidence (stale-refetch)", "1 known failures, 0 unexpected"]),
    ("over-count without evidence", 73, [("groupProtocol=consumer", SELF_TEST_MESSAGE)], "", 1,
     ["NO EVIDENCE (stale-refetch)", "0 known failures, 1 unexpected failures", "UNEXPECTED FAILURE"]),
    ("a stale response above the position is no evidence", 73, [("groupProtocol=consumer", SELF_TEST_MESSAGE)],
     SELF_TEST_STALE % (4, 0), 1, ["NO EVIDENCE"]),
    ("two extra reads, one stale response", 73,
     [("groupProtocol=consumer", SELF_TEST_MESSAGE.replace("count was 5", "count was 6"))], SELF_TEST_STALE % (2, 3), 1,
     ["NO EVIDENCE"]),
    ("the classic consumer has no such race", 73, [("groupProtocol=classic", SELF_TEST_MESSAGE)],
     SELF_TEST_STALE % (2, 3), 1, ["UNEXPECTED FAILURE"]),
    ("too few reads is another failure", 73,
     [("groupProtocol=consumer", SELF_TEST_MESSAGE.replace("count was 5", "count was 3"))], SELF_TEST_STALE % (2, 3), 1,
     ["UNEXPECTED FAILURE"]),
    ("any other failure", 73, [("groupProtocol=consumer", "Could not consume 4 records of topicA-0")], "", 1,
     ["UNEXPECTED FAILURE"]),
]


def write_reports(d, passing, failures, output):
    """Writes Surefire-like reports: passing runs, failing runs, SuiteCoverageTest, one class's output."""
    from xml.sax.saxutils import quoteattr
    fqcn = "org.rlmm.kafkasuite.RollAndOffloadActiveSegmentTest"
    cases = ['<testcase name="executeTieredStorageTest(String) executeTieredStorageTest(String).run%d"/>' % i
             for i in range(passing)]
    for run, message in failures:
        cases.append('<testcase name="executeTieredStorageTest(String) executeTieredStorageTest(String).%s">'
                     '<failure message=%s type="org.opentest4j.AssertionFailedError"/></testcase>'
                     % (run, quoteattr(message)))
    with open(os.path.join(d, "TEST-%s.xml" % fqcn), "w") as f:
        f.write('<testsuite name="%s">%s</testsuite>\n' % (fqcn, "".join(cases)))
    with open(os.path.join(d, "TEST-org.rlmm.kafkasuite.SuiteCoverageTest.xml"), "w") as f:
        f.write('<testsuite name="org.rlmm.kafkasuite.SuiteCoverageTest"><testcase name="coverage"/></testsuite>\n')
    with open(os.path.join(d, fqcn + "-output.txt"), "w") as f:
        f.write(output)


def self_test():
    """Runs the gate against this repository's known-failures.txt on reports made for each case."""
    import io
    import tempfile
    known = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kafkasuite", "known-failures.txt")
    bad = 0
    for name, passing, failures, output, want_rc, want_lines in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory() as d:
            write_reports(d, passing, failures, output)
            buf = io.StringIO()
            rc = gate(d, known, out=buf)
        text = buf.getvalue()
        missing = [l for l in want_lines if l not in text]
        if rc != want_rc or missing:
            bad += 1
            print("gate self-test %r: exit %d (want %d), not printed: %s; it printed:\n%s"
                  % (name, rc, want_rc, missing, text))
    print("gate self-test: %d of %d cases as expected" % (len(SELF_TEST_CASES) - bad, len(SELF_TEST_CASES)))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-test"] and len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else gate(sys.argv[1], sys.argv[2]))
    except (OSError, ValueError) as e:
        print("kafkasuite gate: %s" % e, file=sys.stderr)
        sys.exit(1)
