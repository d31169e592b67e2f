package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
)

// The checks of the cluster fault tests, run after each phase once the
// faults are healed: no acknowledged record lost (everything from the log
// start offset read back in order), every sidecar hosting what its broker
// hosts and nothing else (from its metrics), no `rlmm verify` anomaly and
// no `rlmm scrub` missing segment.

// lostRecords reads every partition from its log start offset to its high
// watermark and returns the acknowledged records at or above the log start
// offset that are missing or differ, and how many were checked.
func (w *clusterLoad) lostRecords(ctx context.Context) (lost []string, checked int, err error) {
	for _, k := range w.tps {
		l, c, err := w.lostIn(ctx, k)
		if err != nil {
			return lost, checked, fmt.Errorf("%s: %w", k, err)
		}
		lost, checked = append(lost, l...), checked+c
	}
	return lost, checked, nil
}

func (w *clusterLoad) lostIn(ctx context.Context, k tpKey) (lost []string, checked int, err error) {
	// The records acknowledged before the offsets are listed: each is below
	// the high watermark listed (acks=all answers once it is).
	w.mu.Lock()
	acked := maps.Clone(w.acked[k])
	w.mu.Unlock()
	var start, end int64
	for try := 0; ; try++ {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		starts, err1 := w.adm.ListStartOffsets(lctx, k.topic)
		ends, err2 := w.adm.ListEndOffsets(lctx, k.topic)
		cancel()
		so, ok1 := starts.Lookup(k.topic, k.partition)
		eo, ok2 := ends.Lookup(k.topic, k.partition)
		if err := errors.Join(err1, err2, so.Err, eo.Err); err == nil && ok1 && ok2 {
			start, end = so.Offset, eo.Offset
			break
		} else if try == 10 {
			return nil, 0, fmt.Errorf("the log's offsets: %w", err)
		}
		time.Sleep(2 * time.Second)
	}
	got := map[int64]string{}
	next, floor := start, start // floor: the highest log start offset seen
	for attempt := 0; next < end && attempt < 5; attempt++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.fc.k.Bootstrap()...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{k.topic: {k.partition: kgo.NewOffset().At(next)}}),
			kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return nil, 0, err
		}
		deadline := time.Now().Add(3 * time.Minute)
		for next < end && time.Now().Before(deadline) {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			var oor bool
			for _, fe := range fs.Errors() {
				if errors.Is(fe.Err, kerr.OffsetOutOfRange) {
					oor = true
				}
			}
			if oor {
				// Retention may have passed the reader (judged by the
				// reader's rule): go on from the new log start offset.
				if s := w.judgeOOR(ctx, k, next, fetchedFrom(cl, k)); s > next {
					next, floor = s, s
				}
				break
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset < next {
					w.problems.add("%s: offset %d read after %d: out of order", k, r.Offset, next-1)
				}
				got[r.Offset] = valueID(r.Value)
				next = r.Offset + 1
			})
		}
		cl.Close()
	}
	if next < end {
		return nil, 0, fmt.Errorf("read up to offset %d of [%d, %d) in 5 tries", next, start, end)
	}
	// An acknowledged record below the last log start offset seen may have
	// gone with retention; one read back must be the same.
	for o, id := range acked {
		if o >= end {
			continue
		}
		g, ok := got[o]
		switch {
		case ok && g != id:
			lost = append(lost, fmt.Sprintf("%s offset %d: read %s, acknowledged %s", k, o, g, id))
		case ok:
			checked++
		case o >= floor:
			checked++
			lost = append(lost, fmt.Sprintf("%s offset %d (%s): not read back", k, o, id))
		}
	}
	// An acknowledged offset at or beyond the high watermark is lost too.
	for o, id := range acked {
		if o >= end {
			lost = append(lost, fmt.Sprintf("%s offset %d (%s): acknowledged, beyond the high watermark %d", k, o, id, end))
		}
	}
	return lost, checked, nil
}

// partLabelRe reads the topic and partition of a per-partition sample.
var partLabelRe = regexp.MustCompile(`^rlmm_remote_partition_segments\{partition="([0-9]+)",topic="([^"]+)"\}$`)

// checkHosting waits (up to two minutes: a stop or a reassignment takes
// time to reach a sidecar) until no reassignment is in flight and every
// sidecar hosts exactly what its broker hosts: rlmm_hosted_partitions
// equals the broker's replicas of tiered partitions, and every partition
// of rlmm_remote_partition_segments is one of them. It returns what still
// differs at the end ("" when nothing).
func (w *clusterLoad) checkHosting(ctx context.Context) string {
	var why string
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		why = w.hostingDiff(ctx)
		if why == "" {
			return ""
		}
		time.Sleep(3 * time.Second)
	}
	return why
}

func (w *clusterLoad) hostingDiff(ctx context.Context) string {
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	reas, err := w.adm.ListPartitionReassignments(lctx, kadm.TopicsSet{})
	if err != nil {
		return "listing reassignments: " + err.Error()
	}
	if n := len(reas.Sorted()); n > 0 {
		return fmt.Sprintf("%d reassignments in flight", n)
	}
	names := make([]string, 0, len(wlTopics))
	for _, tp := range wlTopics {
		names = append(names, tp.name)
	}
	topics, err := w.adm.ListTopics(lctx, names...)
	if err != nil {
		return "describing the topics: " + err.Error()
	}
	hosts := map[int][]string{}
	for _, td := range topics {
		for _, pd := range td.Partitions {
			for _, r := range pd.Replicas {
				hosts[int(r)] = append(hosts[int(r)], fmt.Sprintf("%s-%d", td.Topic, pd.Partition))
			}
		}
	}
	var diffs []string
	for n := 1; n <= nodes; n++ {
		ms, err := w.fc.scrape(lctx, n)
		if err != nil {
			diffs = append(diffs, err.Error())
			continue
		}
		if got := int(ms["rlmm_hosted_partitions"]); got != len(hosts[n]) {
			diffs = append(diffs, fmt.Sprintf("node %d's sidecar hosts %d partitions, its broker %d (%v)", n, got, len(hosts[n]), hosts[n]))
		}
		for name := range ms {
			m := partLabelRe.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			tp := m[2] + "-" + m[1]
			if !slices.Contains(hosts[n], tp) && slices.Contains(names, m[2]) {
				diffs = append(diffs, fmt.Sprintf("node %d's sidecar holds state of %s, which its broker does not host (it hosts %v)", n, tp, hosts[n]))
			}
		}
	}
	return strings.Join(diffs, "; ")
}

// verifyAndScrub runs `rlmm verify` over the metadata topic and `rlmm
// scrub` over the remote storage, and returns their findings: verify's
// anomalies, scrub's missing segments.
func (w *clusterLoad) verifyAndScrub(ctx context.Context) (anomalies, missing []string, err error) {
	boot := strings.Join(w.fc.k.Bootstrap(), ",")
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, code, err := runJSON(ctx, w.fc.rlmmBin, "verify", "--json", "--kafka", boot)
	if err != nil {
		return nil, nil, fmt.Errorf("rlmm verify: %w", err)
	}
	var v struct {
		Anomalies []json.RawMessage `json:"anomalies"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, nil, fmt.Errorf("rlmm verify --json (exit %d): %w: %.300s", code, err, out)
	}
	for _, a := range v.Anomalies {
		// Warnings (a new leader's re-copy of a tail, say) do not change
		// verify's exit status, nor the run's.
		var warning struct {
			Warning bool `json:"warning"`
		}
		if json.Unmarshal(a, &warning) == nil && warning.Warning {
			continue
		}
		anomalies = append(anomalies, string(a))
	}
	if code != 0 && len(anomalies) == 0 {
		return nil, nil, fmt.Errorf("rlmm verify exited %d naming no anomaly: %.500s", code, out)
	}
	// Retention deletes while scrub runs: it reads the metadata, then lists
	// the storage, so a segment deleted in between looks missing once. A
	// COPY_SEGMENT_FINISHED segment missing in two scrubs 10 s apart is
	// missing.
	first, err := w.scrubMissing(ctx, boot)
	if err != nil || len(first) == 0 {
		return anomalies, nil, err
	}
	time.Sleep(10 * time.Second)
	second, err := w.scrubMissing(ctx, boot)
	if err != nil {
		return anomalies, nil, err
	}
	for id, what := range second {
		if _, ok := first[id]; ok {
			missing = append(missing, what)
		}
	}
	return anomalies, missing, nil
}

// scrubMissing runs `rlmm scrub` and returns its missing segments in
// COPY_SEGMENT_FINISHED by id (a DELETE_SEGMENT_STARTED one whose object
// is gone is a deletion under way).
func (w *clusterLoad) scrubMissing(ctx context.Context, boot string) (map[string]string, error) {
	out, code, err := runJSON(ctx, w.fc.rlmmBin, "scrub", "--json", "-q", "--kafka", boot, "--layout", "local", "--remote-dir", w.fc.k.RemoteDir())
	if err != nil {
		return nil, fmt.Errorf("rlmm scrub: %w", err)
	}
	var s scrub.Report
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("rlmm scrub --json (exit %d): %w: %.300s", code, err, out)
	}
	missing := map[string]string{}
	for _, p := range s.Partitions {
		for _, m := range p.Missing {
			if m.State == rlmm.CopySegmentFinished.String() {
				missing[m.SegmentID] = fmt.Sprintf("%s: segment %s (%s, offsets %d-%d)", p.TopicIDPartition, m.SegmentID, m.State, m.StartOffset, m.EndOffset)
			}
		}
	}
	return missing, nil
}

// runJSON runs the rlmm binary and returns its stdout and exit code; an
// exit of 2 (could not run) is an error.
func runJSON(ctx context.Context, bin string, args ...string) ([]byte, int, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code, err = ee.ExitCode(), nil
	}
	if err != nil || code >= 2 {
		return nil, code, fmt.Errorf("%v exit %d: %v: %s", args[:1], code, err, tailString(stderr.String(), 800))
	}
	return stdout.Bytes(), code, nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// phaseResult is what one phase measured.
type phaseResult struct {
	name    string
	took    time.Duration
	checked int
	lost    int
	wrong   int // wrong OffsetOutOfRange, value mismatches, non-linearizable histories
	linOps  int
}

// checkPhase runs every check after a phase and fails t on what it finds.
func (w *clusterLoad) checkPhase(t *testing.T, res *phaseResult) {
	t.Helper()
	ctx := context.Background()
	lost, checked, err := w.lostRecords(ctx)
	if err != nil {
		t.Errorf("reading back the acknowledged records: %v", err)
	}
	res.checked, res.lost = checked, len(lost)
	for i, l := range lost {
		if i == 10 {
			t.Errorf("... and %d more lost", len(lost)-10)
			break
		}
		t.Errorf("lost: %s", l)
	}
	if why := w.checkHosting(ctx); why != "" {
		t.Errorf("sidecar hosting: %s", why)
	}
	anomalies, missing, err := w.verifyAndScrub(ctx)
	if err != nil {
		t.Errorf("verify/scrub: %v", err)
	}
	// The metadata topic and the storage outlive a phase: a finding is
	// the phase's that first sees it.
	for _, a := range anomalies {
		if !w.seen[a] {
			w.seen[a] = true
			t.Errorf("rlmm verify anomaly: %s", tailString(a, 600))
		}
	}
	for _, m := range missing {
		if !w.seen[m] {
			w.seen[m] = true
			t.Errorf("rlmm scrub missing segment: %s", tailString(m, 600))
		}
	}
	res.wrong += int(w.oorWrong.Swap(0) + w.mismatch.Swap(0))
	problems, n := w.problems.take()
	for _, p := range problems {
		t.Errorf("workload: %s", p)
	}
	if n > len(problems) {
		t.Errorf("workload: ... and %d more problems", n-len(problems))
	}
	t.Logf("phase %s: %d records acknowledged (%d produce failures), %d reader rounds, %d records read, %d OffsetOutOfRange of retention passing a reader (not wrong), %d leadership moves (%d failed); read back: %d acknowledged records checked, %d lost; wrong answers %d",
		res.name, w.produced.Swap(0), w.produceFailed.Swap(0), w.readRounds.Swap(0), w.readRecords.Swap(0), w.oorRetention.Swap(0),
		w.moves.Swap(0), w.moveFailed.Swap(0), res.checked, res.lost, res.wrong)
}
