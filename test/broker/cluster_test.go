package brokertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/wire"
)

// clusterMetaPartitions is the metadata topic's partition count in
// TestClusterOfThree: small, so that the few dozen user partitions of the
// test make every broker consume every metadata partition.
const clusterMetaPartitions = 3

// TestClusterOfThree runs three brokers (each also a controller: a quorum
// of three voters) sharing one LocalTieredStorage directory, with the RLMM
// under test on every broker, and:
//   - a topic of replication factor 1 and one of 2, with replicas spread so
//     that every broker hosts user partitions of every metadata partition
//     (checked with wire.MetadataPartition; with rlmm also through each
//     sidecar's rlmm_partition_assigned metric);
//   - every partition tiered (finished segments contiguous from offset 0);
//   - a partition of the first topic reassigned (Admin API) from broker 1 to
//     broker 3, which never hosted it: broker 3 then serves offset 0, which
//     it has only in remote storage, and copies the partition's next segments;
//   - leadership moves: broker 2 stopped (its partitions' leadership moves),
//     started again, and the preferred leaders elected again; each leader
//     copies the segments of its phase, and everything reads back from 0;
//   - rlmm verify of the whole metadata topic is clean;
//   - with rlmm, the remote size gauges of the three sidecars (each of the
//     partitions its broker hosts) add up, for the topic of replication
//     factor 1, to what rlmm inspect --sizes reads from the metadata topic;
//   - with rlmm, each sidecar holds in memory exactly the user partitions
//     its broker hosts and their live segments (checkSidecarHolds: the
//     hosted, cached partitions and cached segments gauges and the segment
//     count of each hosted partition on its /metrics, against the replica
//     assignment and the metadata topic), once in the middle (broker 2,
//     before it stops) and once at the end (all three, after the
//     reassignment took a partition away from broker 1).
func TestClusterOfThree(t *testing.T) {
	mode := requireMode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	extra := fmt.Sprintf("rlmm.config.remote.log.metadata.topic.num.partitions=%d", clusterMetaPartitions)
	if mode == modeRlmm {
		// The sidecar's /metrics (checkRemoteSizeGauges, checkSidecarHolds).
		extra += "\nrlmm.config.rlmm.serve.args=" + sidecarMetricsArgs
	}
	c := startClusterWith(t, 3, extra)
	cl := c.client()

	// Partition i of a topic of replication factor rf is on brokers
	// i%3+1, (i+1)%3+1, ...: every broker leads a third of each topic.
	spread := func(n, rf int) [][]int32 {
		out := make([][]int32, n)
		for i := range out {
			for r := range rf {
				out[i] = append(out[i], int32((i+r)%3+1))
			}
		}
		return out
	}
	rf1 := createTopicAssigned(ctx, t, cl, "three-rf1", spread(6, 1))
	rf2 := createTopicAssigned(ctx, t, cl, "three-rf2", spread(12, 2))
	// Topic ids are random: add partitions to the second topic until every
	// broker hosts a user partition of every metadata partition.
	for round := 0; ; round++ {
		hosted := c.hosting(ctx, t, cl, rf1[0].Topic, rf2[0].Topic)
		missing := missingMetadataPartitions(hosted)
		if len(missing) == 0 {
			for b := int32(1); b <= 3; b++ {
				t.Logf("broker %d hosts %d user partitions, covering all %d metadata partitions", b, len(hosted[b]), clusterMetaPartitions)
			}
			break
		}
		if round == 10 {
			t.Fatalf("after %d rounds of added partitions some broker still lacks metadata partitions: %v", round, missing)
		}
		t.Logf("metadata partitions no user partition of a broker maps to: %v; adding 3 partitions to %s", missing, rf2[0].Topic)
		addPartitions(ctx, t, cl, rf2[0].Topic, len(rf2), spread(len(rf2)+3, 2)[len(rf2):])
		rf2 = waitLeaders(ctx, t, cl, rf2[0].Topic, len(rf2)+3)
	}
	all := append(slices.Clone(rf1), rf2...)

	// About a segment and a third per partition: one rolled segment to copy.
	const first = 1300
	produceAll(ctx, t, cl, all, 0, first)
	c.waitAllTiered(ctx, t, cl, all)
	if mode == modeRlmm {
		for n := 1; n <= 3; n++ {
			c.waitMetadataPartitionsAssigned(ctx, t, n)
		}
		c.checkRemoteSizeGauges(ctx, t, rf1[0].Topic)
	}

	// A partition reassigned to a broker that never hosted it: it reads the
	// partition's remote segments through its own RLMM.
	moved := rf1[0]
	if pd, err := partitionLeader(ctx, cl, moved.Topic, moved.Partition); err != nil || !slices.Equal(pd.Replicas, []int32{1}) {
		t.Fatalf("%s-%d: replicas %v (error %v), want [1]", moved.Topic, moved.Partition, pd.Replicas, err)
	}
	before := c.waitTiered(ctx, t, cl, moved, 0, 1)
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(moved.Topic, moved.Partition, []int32{3})
	resps, err := kadm.NewClient(cl).AlterPartitionAssignments(ctx, req)
	must(t, err)
	if err := resps.Error(); err != nil {
		t.Fatalf("reassigning %s-%d to broker 3: %v", moved.Topic, moved.Partition, err)
	}
	waitFor(ctx, t, fmt.Sprintf("%s-%d to be on broker 3 alone, leading", moved.Topic, moved.Partition), func() (bool, string, error) {
		pd, err := partitionLeader(ctx, cl, moved.Topic, moved.Partition)
		if err != nil {
			return false, "", err
		}
		ongoing, err := kadm.NewClient(cl).ListPartitionReassignments(ctx, kadm.TopicsSet{moved.Topic: {moved.Partition: {}}})
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("leader %d replicas %v ISR %v, reassignments in progress %v", pd.Leader, pd.Replicas, pd.ISR, ongoing.Sorted())
		return pd.Leader == 3 && slices.Equal(pd.Replicas, []int32{3}) && len(ongoing.Sorted()) == 0, status, nil
	})
	var local []int64
	waitFor(ctx, t, "broker 3's local log of the moved partition to start after offset 0", func() (bool, string, error) {
		local, err = localSegments(c.nodeDir(3), moved)
		if err != nil {
			return false, "", err
		}
		return len(local) > 0 && local[0] > 0, fmt.Sprintf("local segments %v", local), nil
	})
	t.Logf("broker 3's local log of %s-%d starts at %d: offsets 0..%d come from remote storage", moved.Topic, moved.Partition, local[0], local[0]-1)
	c.consumePartition(ctx, t, moved.Topic, moved.Partition, 0, first)
	const second, third = 2600, 3900
	must(t, produceRecordsTo(ctx, cl, moved.Topic, moved.Partition, first, second, 0))
	after := c.waitTiered(ctx, t, cl, moved, 0, len(before.finished)+1)
	checkNewCopies(t, "after the reassignment to broker 3", before.finished, after.finished, first, 3)

	// Leadership moves: broker 2 stops, its partitions' other replicas lead;
	// it comes back and the preferred leaders are elected again.
	lead := rf2[1] // replicas [2 3]
	if pd, err := partitionLeader(ctx, cl, lead.Topic, lead.Partition); err != nil || pd.Leader != 2 || !slices.Equal(pd.Replicas, []int32{2, 3}) {
		t.Fatalf("%s-%d: leader %d replicas %v (error %v), want leader 2 of [2 3]", lead.Topic, lead.Partition, pd.Leader, pd.Replicas, err)
	}
	waitLeader := func(want int32, isr int) {
		t.Helper()
		waitFor(ctx, t, fmt.Sprintf("%s-%d: broker %d to lead with %d in sync", lead.Topic, lead.Partition, want, isr), func() (bool, string, error) {
			pd, err := partitionLeader(ctx, cl, lead.Topic, lead.Partition)
			return err == nil && pd.Leader == want && len(pd.ISR) == isr, fmt.Sprintf("%+v", pd), err
		})
	}
	p0 := c.waitTiered(ctx, t, cl, lead, 0, 1)
	if mode == modeRlmm {
		hostedBefore := c.hosting(ctx, t, cl, rf1[0].Topic, rf2[0].Topic)
		c.checkSidecarHolds(ctx, t, 2, hostedBefore[2])
	}
	c.stopNode(2)
	waitLeader(3, 1)
	must(t, produceRecordsTo(ctx, cl, lead.Topic, lead.Partition, first, second, 0))
	p1 := c.waitTiered(ctx, t, cl, lead, 0, len(p0.finished)+1)
	checkNewCopies(t, "broker 2 stopped, broker 3 leads", p0.finished, p1.finished, first, 3)

	c.startNode(2)
	waitLeader(3, 2)
	res, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{lead.Topic: {lead.Partition: {}}})
	must(t, err)
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				t.Fatalf("electing the preferred leader: %v %s", r.Err, r.ErrMessage)
			}
		}
	}
	waitLeader(2, 2)
	must(t, produceRecordsTo(ctx, cl, lead.Topic, lead.Partition, second, third, 0))
	p2 := c.waitTiered(ctx, t, cl, lead, 0, len(p1.finished)+1)
	checkNewCopies(t, "broker 2 restarted and leads again", p1.finished, p2.finished, second, 2)
	c.consumePartition(ctx, t, lead.Topic, lead.Partition, 0, third)
	// A partition of broker 2 alone: offline while it was stopped, read from
	// offset 0 (remote storage) through its restarted RLMM.
	c.consumePartition(ctx, t, rf1[1].Topic, rf1[1].Partition, 0, first)

	bootstrap := strings.Join(c.addrs, ",")
	if out, code := rlmmRun(ctx, t, "verify", "--kafka", bootstrap, "-q"); code != 0 {
		t.Errorf("rlmm verify --kafka %s: exit %d:\n%s", bootstrap, code, out)
	}

	// What each sidecar holds at the end, against what its broker hosts.
	if mode != modeRlmm {
		t.Logf("what each RLMM holds is checked with rlmm only (Kafka's RLMM exports no such metrics)")
		return
	}
	hosted := c.hosting(ctx, t, cl, rf1[0].Topic, rf2[0].Topic)
	for n := 1; n <= 3; n++ {
		c.checkSidecarHolds(ctx, t, n, hosted[int32(n)])
	}
}

// hosting maps each broker to the user partitions of the topics it holds a
// replica of, by the topics' replica assignment now.
func (c *cluster) hosting(ctx context.Context, t *testing.T, cl *kgo.Client, topics ...string) map[int32]map[rlmm.TopicIDPartition]bool {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	must(t, err)
	out := map[int32]map[rlmm.TopicIDPartition]bool{}
	for b := int32(1); b <= int32(c.nodes); b++ {
		out[b] = map[rlmm.TopicIDPartition]bool{}
	}
	for _, topic := range topics {
		d, ok := td[topic]
		if !ok || d.Err != nil {
			t.Fatalf("topic %s: %+v", topic, d)
		}
		for _, p := range d.Partitions {
			tp := rlmm.TopicIDPartition{TopicID: rlmm.Uuid(d.ID), Topic: topic, Partition: p.Partition}
			for _, r := range p.Replicas {
				out[r][tp] = true
			}
		}
	}
	return out
}

// missingMetadataPartitions lists, per broker, the metadata partitions none
// of its user partitions maps to (Kafka's partitioner).
func missingMetadataPartitions(hosted map[int32]map[rlmm.TopicIDPartition]bool) map[int32][]int32 {
	out := map[int32][]int32{}
	for b, tps := range hosted {
		seen := map[int32]bool{}
		for tp := range tps {
			seen[wire.MetadataPartition(tp, clusterMetaPartitions)] = true
		}
		for mp := range int32(clusterMetaPartitions) {
			if !seen[mp] {
				out[b] = append(out[b], mp)
			}
		}
	}
	return out
}

// addPartitions adds len(assignment) partitions to a topic of have
// partitions, the new partition have+i on the brokers assignment[i].
func addPartitions(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, have int, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic = topic
	rt.Count = int32(have + len(assignment))
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	must(t, err)
	for _, r := range resp.Topics {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("adding %d partitions to %s: %v", len(assignment), topic, err)
		}
	}
}

// produceAll writes records from..to-1 into every partition of tps (record
// i at offset i of each), a batch of each partition per request.
func produceAll(ctx context.Context, t *testing.T, cl *kgo.Client, tps []rlmm.TopicIDPartition, from, to int64) {
	t.Helper()
	const batch = 250
	start := time.Now()
	for i := from; i < to; i += batch {
		var recs []*kgo.Record
		for _, tp := range tps {
			for j := i; j < min(i+batch, to); j++ {
				recs = append(recs, &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Key: recordKey(j), Value: recordValue(j)})
			}
		}
		res := cl.ProduceSync(ctx, recs...)
		must(t, res.FirstErr())
		for _, r := range res {
			if want := string(recordKey(r.Record.Offset)); string(r.Record.Key) != want {
				t.Fatalf("%s-%d: record %q landed at offset %d", r.Record.Topic, r.Record.Partition, r.Record.Key, r.Record.Offset)
			}
		}
	}
	t.Logf("produced offsets %d..%d into %d partitions in %s", from, to-1, len(tps), time.Since(start).Round(time.Millisecond))
}

// waitAllTiered waits until every partition of tps has at least one
// finished segment, its finished segments contiguous from offset 0, none
// still being copied, and its earliest local offset right after them (one
// read of the metadata topic per poll for all of them).
func (c *cluster) waitAllTiered(ctx context.Context, t *testing.T, cl *kgo.Client, tps []rlmm.TopicIDPartition) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("all %d partitions tiered", len(tps)), func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		var waiting []string
		for _, tp := range tps {
			segs := v.segments(tp)
			fin := inState(segs, rlmm.CopySegmentFinished)
			end, err := contiguous(fin, 0)
			// A COPY_SEGMENT_STARTED segment a finished one covers is a copy
			// given up and done again (as in waitTiered); any other is
			// still being copied.
			copying := slices.ContainsFunc(inState(segs, rlmm.CopySegmentStarted), func(s *segment) bool {
				return !slices.ContainsFunc(fin, func(f *segment) bool {
					return f.meta.StartOffset <= s.meta.StartOffset && s.meta.StartOffset <= f.meta.EndOffset
				})
			})
			if err != nil || len(fin) == 0 || copying {
				waiting = append(waiting, fmt.Sprintf("%s-%d: %s", tp.Topic, tp.Partition, describe(segs)))
				continue
			}
			local, err := kafkatest.ListOffset(ctx, cl, tp.Topic, tp.Partition, tsEarliestLocal)
			if err != nil || local != end+1 {
				waiting = append(waiting, fmt.Sprintf("%s-%d: finished up to %d, earliest local offset %d (%v)", tp.Topic, tp.Partition, end, local, err))
			}
		}
		if len(waiting) > 3 {
			waiting = append(waiting[:3], fmt.Sprintf("and %d more", len(waiting)-3))
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	})
}

// checkNewCopies checks the segments finished since before (a prefix of
// after): those holding offsets from from on (produced in the phase) were
// copied by broker want, and there is at least one. The previous leader
// may still have copied its last segment of the phase before.
func checkNewCopies(t *testing.T, phase string, before, after []*segment, from int64, want int32) {
	t.Helper()
	if !slices.Equal(segmentIDs(after[:len(before)]), segmentIDs(before)) {
		t.Errorf("%s: the segments finished before changed: %s, then %s", phase, describe(before), describe(after))
	}
	added := after[len(before):]
	mine := 0
	for _, s := range added {
		if s.meta.StartOffset < from {
			continue
		}
		mine++
		if s.meta.BrokerID != want {
			t.Errorf("%s: segment %d..%d was copied by broker %d, want %d", phase, s.meta.StartOffset, s.meta.EndOffset, s.meta.BrokerID, want)
		}
	}
	if mine == 0 {
		t.Errorf("%s: no segment of offsets from %d was copied: %s", phase, from, describe(added))
	}
	t.Logf("%s: %s", phase, describe(added))
}

// liveSegments counts, per user partition, the segments the metadata topic
// has not yet seen DELETE_SEGMENT_FINISHED.
func (v *metaView) liveSegments() map[rlmm.TopicIDPartition]int {
	out := map[rlmm.TopicIDPartition]int{}
	for _, s := range v.segs {
		if s.state() != rlmm.DeleteSegmentFinished {
			out[s.meta.ID.TopicIDPartition]++
		}
	}
	return out
}

// sidecarMetricsArgs are the flags of rlmm serve that checkSidecarHolds
// needs: /metrics on a port of the sidecar's choosing (its address is
// logged into broker.log, "serve: operations endpoint"), a segment count
// series for every hosted partition, computed again at every scrape.
const sidecarMetricsArgs = "--metrics-listen 127.0.0.1:0 --metrics-partitions-limit 1000 --metrics-sizes-max-age 0s"

// checkSidecarHolds checks what node n's sidecar holds in memory now, read
// from its /metrics: exactly the user partitions its broker hosts (hosted,
// each of which must have live segments) and their live segments, as the
// metadata topic has them: rlmm_hosted_partitions and
// rlmm_cached_partitions are len(hosted), rlmm_cached_segments the hosted
// partitions' live segments, and rlmm_remote_partition_segments has one
// series per hosted partition with its count and none of another. A
// partition the cache kept though its broker does not host it shows in the
// cached counts. The brokers go on tiering, so the metadata topic is read
// before and after the scrape, and the check retried until both reads agree
// on the hosted partitions' live segments. The sidecar runs with
// sidecarMetricsArgs.
func (c *cluster) checkSidecarHolds(ctx context.Context, t *testing.T, n int, hosted map[rlmm.TopicIDPartition]bool) {
	t.Helper()
	byName := map[string]rlmm.TopicIDPartition{}
	for tp := range hosted {
		byName[tp.Topic+"-"+fmt.Sprint(tp.Partition)] = tp
	}
	var summary string
	waitFor(ctx, t, fmt.Sprintf("broker %d's sidecar to hold in memory exactly the %d user partitions its broker hosts", n, len(hosted)), func() (bool, string, error) {
		before, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		addr, err := c.operationsAddress(n)
		if err != nil {
			return false, "", err
		}
		samples, err := scrapeAll(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return false, "", err
		}
		after, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		live, moved := before.liveSegments(), after.liveSegments()
		want := 0
		for tp := range hosted {
			if live[tp] != moved[tp] {
				return false, fmt.Sprintf("%s moved from %d to %d live segments during the scrape", tp, live[tp], moved[tp]), nil
			}
			if live[tp] == 0 {
				return false, "", fmt.Errorf("%s, hosted by broker %d, has no live segment in the metadata topic: the test needs one in each", tp, n)
			}
			want += live[tp]
		}
		var problems []string
		for _, m := range []struct {
			name string
			want int
		}{{"rlmm_hosted_partitions", len(hosted)}, {"rlmm_cached_partitions", len(hosted)}, {"rlmm_cached_segments", want}} {
			got, ok := samples.value(m.name, nil)
			if !ok || got != float64(m.want) {
				problems = append(problems, fmt.Sprintf("%s %v (present %v), want %d", m.name, got, ok, m.want))
			}
		}
		seen := 0
		for _, sm := range samples {
			if sm.name != "rlmm_remote_partition_segments" {
				continue
			}
			name := sm.labels["topic"] + "-" + sm.labels["partition"]
			tp, ok := byName[name]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("rlmm_remote_partition_segments of %s, a partition broker %d does not host: %v", name, n, sm.value))
			case sm.value != float64(live[tp]):
				problems = append(problems, fmt.Sprintf("rlmm_remote_partition_segments of %s %v, the metadata topic has %d live", name, sm.value, live[tp]))
			default:
				seen++
			}
		}
		if seen != len(hosted) {
			problems = append(problems, fmt.Sprintf("rlmm_remote_partition_segments of %d hosted partitions, want all %d", seen, len(hosted)))
		}
		slices.Sort(problems)
		summary = fmt.Sprintf("%d user partitions with %d live segments", len(hosted), want)
		return len(problems) == 0, strings.Join(problems, "; "), nil
	})
	t.Logf("broker %d's sidecar holds in memory exactly what its broker hosts: %s", n, summary)
}

// sample is one series of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

type samples []sample

// value returns the value of the series of name whose labels are exactly
// labels (nil: none).
func (ss samples) value(name string, labels map[string]string) (float64, bool) {
	for _, s := range ss {
		if s.name == name && maps.Equal(s.labels, labels) {
			return s.value, true
		}
	}
	return 0, false
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrapeAll reads every series of a Prometheus text exposition (labels
// with a nil map when there are none).
func scrapeAll(ctx context.Context, url string) (samples, error) {
	body, err := scrape(ctx, url)
	if err != nil {
		return nil, err
	}
	var out samples
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{name: m[1]}
		if _, err := fmt.Sscan(m[3], &s.value); err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		for _, lp := range labelPair.FindAllStringSubmatch(m[2], -1) {
			if s.labels == nil {
				s.labels = map[string]string{}
			}
			s.labels[lp[1]] = lp[2]
		}
		out = append(out, s)
	}
	return out, nil
}

// operationsEndpoint is the address of node n's sidecar's /metrics, from the
// last "serve: operations endpoint" line in its broker.log.
var operationsEndpoint = regexp.MustCompile(`serve: operations endpoint.*address=([0-9.:]+)`)

// waitMetadataPartitionsAssigned waits until node n's sidecar reports every
// metadata partition assigned (rlmm_partition_assigned 1).
func (c *cluster) waitMetadataPartitionsAssigned(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("broker %d's sidecar to consume all %d metadata partitions", n, clusterMetaPartitions), func() (bool, string, error) {
		addr, err := c.operationsAddress(n)
		if err != nil {
			return false, err.Error(), nil // not logged yet
		}
		assigned, err := scrapeGauge(ctx, "http://"+addr+"/metrics", "rlmm_partition_assigned")
		if err != nil {
			return false, "", err
		}
		for mp := range clusterMetaPartitions {
			if assigned[fmt.Sprint(mp)] != 1 {
				return false, fmt.Sprintf("rlmm_partition_assigned %v", assigned), nil
			}
		}
		return true, "", nil
	})
}

// checkRemoteSizeGauges: a topic of replication factor 1 has each partition
// on one broker, so the remote size gauges of the three sidecars
// (rlmm_remote_bytes and rlmm_remote_segments, of the partitions each
// broker hosts) add up to the topic's row of rlmm inspect --sizes, which
// reads the whole metadata topic. Nothing is produced meanwhile, but a
// copy or a retention deletion can still land between the two reads, so
// the comparison is retried until they agree.
func (c *cluster) checkRemoteSizeGauges(ctx context.Context, t *testing.T, topic string) {
	t.Helper()
	bootstrap := strings.Join(c.addrs, ",")
	waitFor(ctx, t, fmt.Sprintf("the sidecars' remote size gauges of %s to add up to rlmm inspect --sizes", topic), func() (bool, string, error) {
		out, code := rlmmRun(ctx, t, "inspect", "--kafka", bootstrap, "--sizes", "--json", "-q")
		if code != 0 {
			return false, "", fmt.Errorf("rlmm inspect --sizes: exit %d", code)
		}
		var doc struct {
			Rows []struct {
				Topic       string `json:"topic"`
				Partition   int32  `json:"partition"`
				Segments    int    `json:"segments"`
				RemoteBytes int64  `json:"remoteBytes"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			return false, "", fmt.Errorf("rlmm inspect --sizes --json: %w", err)
		}
		var wantBytes int64
		wantSegs := 0
		for _, r := range doc.Rows {
			if r.Topic == topic && r.Partition == -1 {
				wantBytes, wantSegs = r.RemoteBytes, r.Segments
			}
		}
		if wantSegs == 0 {
			return false, "rlmm inspect --sizes has no remote segments of " + topic + " yet", nil
		}
		var gotBytes, gotSegs float64
		for n := 1; n <= 3; n++ {
			addr, err := c.operationsAddress(n)
			if err != nil {
				return false, "", err
			}
			bytes, err := scrapeFamily(ctx, "http://"+addr+"/metrics", "rlmm_remote_bytes", "topic")
			if err != nil {
				return false, "", err
			}
			segs, err := scrapeFamily(ctx, "http://"+addr+"/metrics", "rlmm_remote_segments", "topic")
			if err != nil {
				return false, "", err
			}
			gotBytes += bytes[topic]
			gotSegs += segs[topic]
		}
		status := fmt.Sprintf("gauges %v bytes in %v segments, inspect %d bytes in %d segments", gotBytes, gotSegs, wantBytes, wantSegs)
		return gotBytes == float64(wantBytes) && gotSegs == float64(wantSegs), status, nil
	})
}

// operationsAddress is the address of node n's sidecar's /metrics.
func (c *cluster) operationsAddress(n int) (string, error) {
	lines, err := grepFile(filepath.Join(c.nodeDir(n), "broker.log"), "serve: operations endpoint")
	if err != nil {
		return "", err
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("no operations endpoint in broker %d's broker.log", n)
	}
	m := operationsEndpoint.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		return "", fmt.Errorf("no address in %q", lines[len(lines)-1])
	}
	return m[1], nil
}

// scrapeGauge reads a Prometheus text exposition and returns the values of
// one family by its "partition" label.
func scrapeGauge(ctx context.Context, url, name string) (map[string]float64, error) {
	return scrapeFamily(ctx, url, name, "partition")
}

// scrapeFamily reads a Prometheus text exposition and returns the values of
// one family of a single label, by that label's value.
func scrapeFamily(ctx context.Context, url, name, label string) (map[string]float64, error) {
	body, err := scrape(ctx, url)
	if err != nil {
		return nil, err
	}
	line := regexp.MustCompile(`^` + name + `\{` + label + `="([^"]*)"\} (\S+)$`)
	out := map[string]float64{}
	for l := range strings.Lines(body) {
		l = strings.TrimRight(l, "\n")
		if m := line.FindStringSubmatch(l); m != nil {
			var v float64
			if _, err := fmt.Sscan(m[2], &v); err != nil {
				return nil, fmt.Errorf("%s: %w", l, err)
			}
			out[m[1]] = v
		}
	}
	return out, nil
}

// scrape GETs a /metrics page.
func scrape(ctx context.Context, url string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	// No keep-alive: no connection (and its goroutines) outlives the scrape.
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}
