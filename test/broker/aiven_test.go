package brokertest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/rebuild"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
	"github.com/rlmm-go/rlmm/test/kafkatest"
	"github.com/rlmm-go/rlmm/topicbased"
)

// aivenBucket is the S3 bucket (of scripts/seaweedfs.sh's server) a cluster's
// brokers tier to through Aiven's RSM, under a key prefix.
type aivenBucket struct {
	s3     scrubtest.S3Server
	client *s3.Client // on a transport of its own, closed at the end of the test
	name   string
	prefix string
}

// startAivenCluster starts a cluster of nodes whose brokers tier to Aiven's
// RSM (kafkatest.AivenRSM: its build in ../shared/aiven-rsm beside the
// repository) on a new bucket of the S3 server of the environment, with
// prefix as its key.prefix. It fails the test when the RSM's build is
// missing; without an S3 server it skips, saying why (fails under CI).
func startAivenCluster(t *testing.T, nodes int, prefix string) (*cluster, *aivenBucket) {
	t.Helper()
	requireMode(t)
	srv := scrubtest.NeedS3(t)
	ctx := testCtx(t)
	// The test's own transport: its idle connections are closed at the
	// end, so no goroutine of it outlives the test (TestMain's goleak).
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	b := &aivenBucket{s3: srv, name: fmt.Sprintf("rlmm-aiven-%d", time.Now().UnixNano()), prefix: prefix,
		client: s3.New(srv.Client().Options(), func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: tr} })}
	if _, err := b.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b.name}); err != nil {
		t.Fatalf("creating bucket %s at %s: %v", b.name, srv.Endpoint, err)
	}
	// rlmm scrub, rebuild and repair (run by the tests) take the AWS SDK's
	// credentials from the environment.
	scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
	c := startClusterOpts(t, nodes, clusterOptions{aiven: &kafkatest.AivenS3{Endpoint: srv.Endpoint, Bucket: b.name,
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, Prefix: prefix}})
	return c, b
}

// storageArgs are the flags naming the bucket for rlmm scrub, rebuild and repair.
func (b *aivenBucket) storageArgs() []string {
	return []string{"--layout", "aiven", "--s3-bucket", b.name, "--s3-prefix", b.prefix, "--s3-endpoint", b.s3.Endpoint,
		"--s3-region", "us-east-1"}
}

// objects lists every object of the bucket: key to size.
func (b *aivenBucket) objects(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.name})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out, nil
}

func (b *aivenBucket) get(ctx context.Context, key string) ([]byte, error) {
	r, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: &key})
	if err != nil {
		return nil, fmt.Errorf("getting %s: %w", key, err)
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *aivenBucket) put(ctx context.Context, key string, body []byte) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.name, Key: &key, Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body)))})
	return err
}

func (b *aivenBucket) delete(ctx context.Context, keys ...string) error {
	for _, k := range keys {
		if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.name, Key: &k}); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	return nil
}

// aivenMainPath is Aiven's ObjectKeyFactory.mainPath of a segment.
func aivenMainPath(s *segment) string {
	tp := s.meta.ID.TopicIDPartition
	return fmt.Sprintf("%s-%s/%d/%020d-%s", tp.Topic, tp.TopicID, tp.Partition, s.meta.StartOffset, s.meta.ID.ID)
}

// checkAivenSegments checks every segment of segs (COPY_SEGMENT_FINISHED)
// against what Aiven's RSM wrote to the bucket:
//   - the custom metadata of its FINISHED event (what the RSM returned from
//     copyLogSegmentData, stored by the broker through the RLMM) holds the
//     three fields custom.metadata.fields.include names: the object prefix
//     is prefix, the object key the segment's main path, the remote size
//     the sum of the sizes of the three objects found at prefix+key+.log,
//     .indexes and .rsm-manifest; and rlmm's encoder (layout's) writes
//     those fields back into the very same bytes;
//   - its .rsm-manifest, read by rlmm rebuild's parser, names the segment
//     with the offsets, largest timestamp, leader epochs and size the
//     broker wrote in the COPY_SEGMENT_STARTED event.
//
// It returns the segments' custom metadata by segment id.
func checkAivenSegments(ctx context.Context, t *testing.T, b *aivenBucket, prefix string, segs []*segment) map[rlmm.Uuid][]byte {
	t.Helper()
	objs, err := b.objects(ctx)
	must(t, err)
	out := map[rlmm.Uuid][]byte{}
	for _, s := range segs {
		id := s.meta.ID.ID
		if s.custom == nil {
			t.Errorf("segment %s: no custom metadata in its COPY_SEGMENT_FINISHED event", id)
			continue
		}
		out[id] = s.custom
		f, err := layout.DecodeAivenCustomMetadata(s.custom)
		if err != nil {
			t.Errorf("segment %s: custom metadata %x: %v", id, s.custom, err)
			continue
		}
		main := aivenMainPath(s)
		var total int64
		for _, ext := range []string{"log", "indexes", "rsm-manifest"} {
			size, ok := objs[prefix+main+"."+ext]
			if !ok {
				t.Errorf("segment %s: no object %s in bucket %s", id, prefix+main+"."+ext, b.name)
			}
			total += size
		}
		if !f.HasRemoteSize || f.RemoteSize != total || !f.HasObjectPrefix || f.ObjectPrefix != prefix || !f.HasObjectKey || f.ObjectKey != main {
			t.Errorf("segment %s: custom metadata %+v, want remote size %d (the three objects), prefix %q, key %q", id, f, total, prefix, main)
		}
		if again := layout.EncodeAivenCustomMetadata(f); !bytes.Equal(again, s.custom) {
			t.Errorf("segment %s: rlmm encodes the fields as %x, Aiven's RSM wrote %x", id, again, s.custom)
		}
		mb, err := b.get(ctx, prefix+main+".rsm-manifest")
		if err != nil {
			t.Error(err)
			continue
		}
		saveAivenSample(t, s, prefix, objs, mb)
		man, err := rebuild.ParseAivenManifest(mb, main+".rsm-manifest")
		if err != nil {
			t.Errorf("segment %s: %v", id, err)
			continue
		}
		w := s.meta
		if man.TP != w.ID.TopicIDPartition || man.SegmentID != id || man.StartOffset != w.StartOffset || man.EndOffset != w.EndOffset ||
			man.MaxTimestampMs != w.MaxTimestampMs || !slices.Equal(man.LeaderEpochs, w.LeaderEpochs) ||
			man.OriginalFileSize != int64(w.SizeInBytes) || man.TxnIndexEmpty != w.TxnIndexEmpty {
			t.Errorf("segment %s: the manifest says %+v\n  the broker wrote %v", id, man, w)
		}
	}
	return out
}

// aivenSampleDir (the test flag -aiven-sample-dir) names a directory where
// checkAivenSegments saves what the RSM wrote for the first segment it
// checks (its manifest, custom metadata and objects' keys and sizes): how
// scrub/layout's and rebuild's testdata of the real RSM was made.
var aivenSampleDir = flag.String("aiven-sample-dir", "", "save what Aiven's RSM wrote for one segment into this directory")

func saveAivenSample(t *testing.T, s *segment, prefix string, objs map[string]int64, manifest []byte) {
	t.Helper()
	dir := *aivenSampleDir
	if dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "segment.rsm-manifest")); err == nil {
		return
	}
	must(t, os.MkdirAll(dir, 0o755))
	var keys strings.Builder
	for _, ext := range []string{"log", "indexes", "rsm-manifest"} {
		k := prefix + aivenMainPath(s) + "." + ext
		fmt.Fprintf(&keys, "%s %d\n", k, objs[k])
	}
	must(t, os.WriteFile(filepath.Join(dir, "segment.rsm-manifest"), manifest, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "segment.custom-metadata"), []byte(hex.EncodeToString(s.custom)+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "segment.objects"), []byte(keys.String()), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "segment.metadata"), []byte(s.meta.String()+"\n"), 0o644))
	t.Logf("saved the RSM's objects of segment %s in %s", s.meta.ID.ID, dir)
}

// snapshotCustomMetadata stops node (so its sidecar writes its snapshot),
// reads the snapshot with `rlmm inspect --snapshot` and checks that every
// segment of want is there with exactly those custom metadata bytes: what
// rlmm hands back to the broker, and the broker to the RSM, for it. The
// node is left stopped.
func (c *cluster) snapshotCustomMetadata(ctx context.Context, t *testing.T, node int, tp rlmm.TopicIDPartition, want map[rlmm.Uuid][]byte) {
	t.Helper()
	c.stopNode(node)
	snaps := findFiles(t, c.nodeDir(node), topicbased.SnapshotFileName)
	if len(snaps) != 1 {
		t.Fatalf("%d sidecar snapshots under %s, want 1", len(snaps), c.nodeDir(node))
	}
	doc, code := rlmmJSON[struct {
		Blocks []struct {
			Partition   string        `json:"partition"`
			SegmentList []jsonSegment `json:"segmentList"`
		} `json:"blocks"`
	}](ctx, t, "inspect", "--snapshot", snaps[0], "--json", "--segments", "-q", "--topic", tp.Topic)
	if code != 0 {
		t.Fatalf("rlmm inspect --snapshot %s: exit %d", snaps[0], code)
	}
	got := map[string]string{}
	for _, blk := range doc.Blocks {
		if blk.Partition == tp.String() {
			for _, s := range blk.SegmentList {
				got[s.ID] = s.CustomMetadata
			}
		}
	}
	bad := 0
	for id, b := range want {
		if g, ok := got[id.String()]; !ok || g != hex.EncodeToString(b) {
			t.Errorf("segment %s: the sidecar's snapshot holds custom metadata %q (present %v), the RSM returned %x", id, g, ok, b)
			bad++
		}
	}
	if bad > 0 {
		return
	}
	t.Logf("the sidecar's snapshot holds the custom metadata of all %d segments byte for byte", len(want))
}

// recreateMetadataTopic deletes __remote_log_metadata and creates it again,
// empty, with as many partitions (metadata partitions are Kafka's hash of
// the user partition modulo their count), replication factor 1 (the brokers
// that could hold more replicas are stopped) and the settings Kafka's RLMM
// gives it (cleanup.policy delete, retention.ms -1).
func recreateMetadataTopic(ctx context.Context, t *testing.T, cl *kgo.Client) {
	t.Helper()
	adm := kadm.NewClient(cl)
	topic := kafkalog.DefaultTopic
	td, err := adm.ListTopics(ctx, topic)
	must(t, err)
	d, ok := td[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		t.Fatalf("the metadata topic before its deletion: %+v", d)
	}
	partitions := int32(len(d.Partitions))
	resps, err := adm.DeleteTopics(ctx, topic)
	must(t, err)
	must(t, resps.Error())
	waitFor(ctx, t, fmt.Sprintf("%s (id %s) deleted and created again, empty, with %d partitions", topic, d.ID, partitions), func() (bool, string, error) {
		cfg := map[string]*string{"cleanup.policy": kadm.StringPtr("delete"), "retention.ms": kadm.StringPtr("-1")}
		r, err := adm.CreateTopic(ctx, partitions, 1, cfg, topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return false, "", err
		}
		if r.Err != nil {
			// Still being deleted: TOPIC_ALREADY_EXISTS until it is gone.
			return false, r.Err.Error(), nil
		}
		return true, "", nil
	})
	waitLeaders(ctx, t, cl, topic, int(partitions))
}

// jsonSegment is the part of a segment of `rlmm inspect --json --segments`
// read here.
type jsonSegment struct {
	ID             string `json:"segmentId"`
	CustomMetadata string `json:"customMetadata"`
}

// setAivenPrefix sets the key.prefix of node's Aiven RSM (takes effect at
// its next start): a line of the node's own, after the cluster's.
func (c *cluster) setAivenPrefix(t *testing.T, node int, prefix string) {
	t.Helper()
	c.editNodeExtra(node, func(string) string { return "rsm.config.key.prefix=" + prefix })
}

// TestAivenTiering runs Aiven's tiered-storage-for-apache-kafka v1.0.0 on
// S3 (SeaweedFS) as the RSM of a Kafka 4.3.1 broker, with the RLMM under
// test (rlmm's plugin; Kafka's own as the control):
//   - 5000 records tier (at least 4 segments) and read back from offset 0,
//     the early ones from S3;
//   - the custom metadata the RSM returned for each segment is in its
//     COPY_SEGMENT_FINISHED event and agrees with the bucket, and the
//     manifests with the metadata (checkAivenSegments);
//   - with rlmm, the sidecar's snapshot holds each segment's custom
//     metadata byte for byte (snapshotCustomMetadata);
//   - the RLMM hands the custom metadata back to the RSM: the broker
//     restarts with another key.prefix, under which only copies of the
//     manifests are (Aiven 1.0.0 reads a manifest at the configured prefix,
//     but a segment's log and indexes at the prefix and key of its custom
//     metadata), and still reads every record from 0; then it restarts on
//     the first prefix, the copies gone;
//   - with rlmm, the sidecar is killed (kill -9) and the records are read
//     again through the new one;
//   - 2500 more records tier, rlmm verify is clean, rlmm scrub --layout
//     aiven is clean;
//   - remote retention deletes the oldest segments, objects included;
//   - deleting the topic deletes every segment and leaves no object.
func TestAivenTiering(t *testing.T) {
	ctx := testCtx(t)
	const prefix, otherPrefix = "tiered/", "moved/"
	c, b := startAivenCluster(t, 1, prefix)
	cl := c.client()
	tp := createTopic(ctx, t, cl, "aiven", []int32{1})
	const first, second = 5000, 7500
	produce(ctx, t, cl, tp.Topic, 0, first)
	ti := c.waitTiered(ctx, t, cl, tp, 0, 4)
	custom := checkAivenSegments(ctx, t, b, prefix, ti.finished)
	t.Logf("%d segments in S3 under %s, custom metadata as the RSM returned it (first: %x)", len(ti.finished), prefix, ti.finished[0].custom)
	c.consume(ctx, t, tp.Topic, 0, first)

	if c.mode == modeRlmm {
		c.snapshotCustomMetadata(ctx, t, 1, tp, custom)
	} else {
		c.stopNode(1)
	}
	var copies []string
	for _, s := range ti.finished {
		m, err := b.get(ctx, prefix+aivenMainPath(s)+".rsm-manifest")
		must(t, err)
		copies = append(copies, otherPrefix+aivenMainPath(s)+".rsm-manifest")
		must(t, b.put(ctx, copies[len(copies)-1], m))
	}
	c.setAivenPrefix(t, 1, otherPrefix)
	c.startNode(1)
	waitLeaders(ctx, t, cl, tp.Topic, 1)
	// Only the remote offsets: the RSM reads them where the custom
	// metadata the RLMM handed back says (no .log or .indexes under the
	// configured prefix).
	c.consume(ctx, t, tp.Topic, 0, ti.remoteEnd+1)
	c.stopNode(1)
	must(t, b.delete(ctx, copies...))
	c.setAivenPrefix(t, 1, prefix)
	c.startNode(1)
	waitLeaders(ctx, t, cl, tp.Topic, 1)
	c.consume(ctx, t, tp.Topic, 0, first)

	if c.mode == modeRlmm {
		killed := c.killSidecar(t)
		c.waitNewSidecar(ctx, t, killed)
		c.consume(ctx, t, tp.Topic, 0, first)
	}

	produce(ctx, t, cl, tp.Topic, first, second)
	later := c.waitTiered(ctx, t, cl, tp, 0, len(ti.finished)+2)
	checkAivenSegments(ctx, t, b, prefix, later.finished)
	c.consume(ctx, t, tp.Topic, 0, second)
	c.verifyAndInspect(ctx, t, tp)
	waitFor(ctx, t, "a clean scrub", func() (bool, string, error) {
		doc, code := rlmmJSON[scrubDoc](ctx, t, append([]string{"scrub", "--json", "-q", "--kafka", strings.Join(c.addrs, ",")}, b.storageArgs()...)...)
		return code == 0 && doc.OK && doc.Summary.LiveSegments >= len(later.finished), describeScrub(&doc), nil
	})

	// Remote retention by size: about two segments' worth kept.
	alterTopic(ctx, t, cl, tp.Topic, map[string]string{"retention.bytes": strconv.Itoa(2*segmentBytes + segmentBytes/2)})
	var deleted []*segment
	waitFor(ctx, t, "retention to delete the oldest remote segments and their objects", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		all := v.segments(tp)
		deleted = inState(all, rlmm.DeleteSegmentFinished)
		if len(deleted) == 0 || len(inState(all, rlmm.DeleteSegmentStarted)) > 0 {
			return false, describe(all), nil
		}
		objs, err := b.objects(ctx)
		if err != nil {
			return false, "", err
		}
		var left []string
		for key := range objs {
			for _, s := range deleted {
				if strings.Contains(key, s.meta.ID.ID.String()) {
					left = append(left, key)
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("objects of deleted segments: %v", left), nil
	})
	t.Logf("retention deleted %d segments and their objects", len(deleted))
	if ls, err := listOffset(ctx, cl, tp.Topic, tsEarliest); err != nil || ls <= deleted[len(deleted)-1].meta.EndOffset {
		t.Errorf("after retention the log starts at %d (%v), want past %d", ls, err, deleted[len(deleted)-1].meta.EndOffset)
	}

	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, tp.Topic)
	must(t, err)
	must(t, resps.Error())
	waitFor(ctx, t, "the deleted topic's segments and objects to go", func() (bool, string, error) {
		v, err := c.readMetadata(ctx)
		if err != nil {
			return false, "", err
		}
		all := v.segments(tp)
		objs, err := b.objects(ctx)
		if err != nil {
			return false, "", err
		}
		return len(inState(all, rlmm.DeleteSegmentFinished)) == len(all) && len(objs) == 0,
			fmt.Sprintf("segments %s; %d objects left", describe(all), len(objs)), nil
	})
}

// TestAivenScrubRebuild runs rlmm scrub, repair and rebuild against the
// objects Aiven's RSM (v1.0.0, on S3) wrote for a Kafka 4.3.1 cluster of two
// brokers with the RLMM under test. Two topics on broker 2, tiered:
//   - scrub --layout aiven is clean;
//   - on "damaged", four defects are planted: a segment's .log deleted,
//     another's .indexes truncated, a third's .rsm-manifest deleted, and an
//     orphan (a .log under a segment id no metadata names). Scrub reports
//     exactly those (two missing objects, a remote size mismatch, an
//     unprotected orphan); repair plans to quarantine the orphan and
//     reports the segment without its log lost, and nothing else; applied,
//     the orphan is under the quarantine; a second repair has nothing to do;
//   - then broker 2 stops, __remote_log_metadata is deleted and created
//     again empty (and, with rlmm, the sidecars' snapshots removed): rebuild --topic
//     "rebuilt" plans STARTED and FINISHED for exactly the segments the
//     broker had finished, with the metadata the broker wrote (but broker
//     id and event time) and the custom metadata the RSM had returned, byte
//     for byte (--aiven-custom-metadata-fields), and a second run nothing; the brokers restart and
//     serve every record of "rebuilt" from offset 0, the early ones from
//     S3 through the rebuilt metadata; rlmm verify is clean.
func TestAivenScrubRebuild(t *testing.T) {
	ctx := testCtx(t)
	const prefix = "tiered/"
	c, b := startAivenCluster(t, 2, prefix)
	cl := c.client()
	damaged := createTopic(ctx, t, cl, "damaged", []int32{2})
	rebuilt := createTopic(ctx, t, cl, "rebuilt", []int32{2})
	const records = 5000
	produce(ctx, t, cl, damaged.Topic, 0, records)
	produce(ctx, t, cl, rebuilt.Topic, 0, records)
	dti := c.waitTiered(ctx, t, cl, damaged, 0, 4)
	rti := c.waitTiered(ctx, t, cl, rebuilt, 0, 4)
	checkAivenSegments(ctx, t, b, prefix, dti.finished)
	checkAivenSegments(ctx, t, b, prefix, rti.finished)

	bootstrap := strings.Join(c.addrs, ",")
	scrubArgs := append([]string{"scrub", "--json", "-q", "--kafka", bootstrap}, b.storageArgs()...)
	waitFor(ctx, t, "a clean scrub", func() (bool, string, error) {
		doc, code := rlmmJSON[scrubDoc](ctx, t, scrubArgs...)
		return code == 0 && doc.OK, describeScrub(&doc), nil
	})

	// The defects, on the first three finished segments of "damaged".
	segs := dti.finished
	key := func(s *segment, ext string) string { return prefix + aivenMainPath(s) + "." + ext }
	lostLog, truncated, noManifest := segs[0], segs[1], segs[2]
	must(t, b.delete(ctx, key(lostLog, "log")))
	idx, err := b.get(ctx, key(truncated, "indexes"))
	must(t, err)
	must(t, b.put(ctx, key(truncated, "indexes"), idx[:len(idx)/2]))
	must(t, b.delete(ctx, key(noManifest, "rsm-manifest")))
	orphanID := rlmm.RandomUuid()
	orphanKey := fmt.Sprintf("%s%s-%s/%d/%020d-%s.log", prefix, damaged.Topic, damaged.TopicID, damaged.Partition, 900_000, orphanID)
	must(t, b.put(ctx, orphanKey, []byte("no segment anyone recorded")))
	planted := time.Now()
	t.Logf("planted: %s deleted, %s cut to %d of %d bytes, %s deleted, orphan %s",
		key(lostLog, "log"), key(truncated, "indexes"), len(idx)/2, len(idx), key(noManifest, "rsm-manifest"), orphanKey)

	doc, code := rlmmJSON[scrubDoc](ctx, t, scrubArgs...)
	if code != 1 {
		t.Errorf("scrub of the planted defects: exit %d, want 1", code)
	}
	var missing, orphans, mismatches []string
	found := false
	for _, p := range doc.Partitions {
		if p.TopicIDPartition != damaged.String() {
			if len(p.Missing)+len(p.Orphans)+len(p.Mismatches) > 0 {
				t.Errorf("findings in partition %s, where nothing was planted: %+v", p.TopicIDPartition, p)
			}
			continue
		}
		found = true
		for _, m := range p.Missing {
			missing = append(missing, m.SegmentID+" "+strings.Join(m.Keys, ","))
		}
		for _, o := range p.Orphans {
			orphans = append(orphans, fmt.Sprintf("%s %s protected=%v", o.Key, o.Reason, o.Protected))
		}
		for _, m := range p.Mismatches {
			mismatches = append(mismatches, fmt.Sprintf("%s %s %s", m.Kind, m.SegmentID, strings.Join(m.MissingKeys, ",")))
		}
	}
	if !found {
		t.Fatalf("scrub reports nothing of %s: %+v", damaged, doc.Report)
	}
	// The deleted log: its segment's data missing. The truncated index: the
	// segment's objects no longer add up to the remote size of its custom
	// metadata. The deleted manifest: a partial segment.
	if want := []string{lostLog.meta.ID.ID.String() + " " + key(lostLog, "log")}; !slices.Equal(missing, want) {
		t.Errorf("scrub: missing %q, want %q", missing, want)
	}
	if want := []string{orphanKey + " " + scrub.ReasonNotInMetadata + " protected=false"}; !slices.Equal(orphans, want) {
		t.Errorf("scrub: orphans %q, want %q", orphans, want)
	}
	wantMismatches := []string{scrub.MismatchSize + " " + truncated.meta.ID.ID.String() + " ",
		scrub.MismatchPartial + " " + noManifest.meta.ID.ID.String() + " " + key(noManifest, "rsm-manifest")}
	slices.Sort(mismatches)
	slices.Sort(wantMismatches)
	if !slices.Equal(mismatches, wantMismatches) {
		t.Errorf("scrub: mismatches %q, want %q", mismatches, wantMismatches)
	}
	t.Logf("scrub found the planted defects: %s", describeScrub(&doc))

	// The orphan is seconds old (S3 keeps no back-dated time): repair takes
	// orphans 1 s old. Nothing is copying now (every segment but the active
	// ones is tiered), so no copy in flight can pass for an orphan.
	time.Sleep(time.Until(planted.Add(2 * time.Second)))
	repairArgs := append([]string{"repair", "--json", "-q", "--kafka", bootstrap, "--older-than", "1s", "--stuck-after", "1h"}, b.storageArgs()...)
	rdoc, code := rlmmJSON[repairDoc](ctx, t, repairArgs...)
	if code != 1 || rdoc.Applied || len(rdoc.Quarantine) != 1 || rdoc.Quarantine[0].Key != orphanKey || len(rdoc.Close) != 0 ||
		len(rdoc.Lost) != 1 || rdoc.Lost[0].SegmentID != lostLog.meta.ID.ID.String() || len(rdoc.Purge) != 0 {
		t.Fatalf("repair dry run: exit %d, plan %+v\nwant exit 1, quarantine %s, lost %s, nothing else", code, rdoc.Plan, orphanKey, lostLog.meta.ID.ID)
	}
	rdoc, code = rlmmJSON[repairDoc](ctx, t, append(slices.Clone(repairArgs), "--apply", "--yes")...)
	if rdoc.Result == nil || rdoc.Result.Moved != 1 || rdoc.Result.Published != 0 {
		t.Fatalf("repair --apply: exit %d, result %+v", code, rdoc.Result)
	}
	objs, err := b.objects(ctx)
	must(t, err)
	if _, ok := objs[orphanKey]; ok {
		t.Errorf("the orphan %s is still in place after repair --apply", orphanKey)
	}
	if _, ok := objs[rdoc.Quarantine[0].To]; !ok {
		t.Errorf("the orphan is not at %s in the quarantine", rdoc.Quarantine[0].To)
	}
	rdoc, _ = rlmmJSON[repairDoc](ctx, t, repairArgs...)
	if rdoc.Summary.Actions() != 0 || rdoc.Summary.Held != 1 || len(rdoc.Lost) != 1 {
		t.Errorf("second repair: summary %+v, lost %d: want nothing to do, the orphan held, the lost segment reported", rdoc.Summary, len(rdoc.Lost))
	}

	// The metadata lost: broker 2 (hosting both topics) stopped, the
	// metadata topic deleted and created again empty, the sidecars'
	// snapshots removed.
	c.stopNode(2)
	before, err := c.readMetadata(ctx)
	must(t, err)
	orig := before.segments(rebuilt)
	cut := map[string]bool{}
	for _, s := range inState(orig, rlmm.CopySegmentStarted) {
		cut[s.meta.ID.ID.String()] = true
	}
	if c.mode == modeRlmm {
		removeFiles(t, findFiles(t, c.nodeDir(2), topicbased.SnapshotFileName))
	}
	recreateMetadataTopic(ctx, t, c.client(kgo.SeedBrokers(c.addrs[0])))
	if lost, err := c.readMetadata(ctx); err != nil || lost.events != 0 {
		t.Fatalf("the new metadata topic holds %d events (%v)", lost.events, err)
	}
	// The fields the brokers' RSM returns (kafkatest.AivenRSM's
	// rsm.config.custom.metadata.fields.include): the rebuilt FINISHED
	// events carry the custom metadata the RSM returned, byte for byte.
	rebuildArgs := append([]string{"rebuild", "--json", "-q", "--kafka", c.addrs[0], "--topic", rebuilt.Topic,
		"--aiven-custom-metadata-fields", kafkatest.AivenCustomMetadataFields}, b.storageArgs()...)
	run := rebuildRunner(ctx, t, rebuildArgs, cut)
	dry := run()
	var want []*segment
	for _, s := range orig {
		if slices.ContainsFunc(dry.Steps, func(st rebuildStep) bool { return st.SegmentID == s.meta.ID.ID.String() }) {
			want = append(want, s)
		} else if !cut[s.meta.ID.ID.String()] {
			t.Errorf("finished segment %s (%d..%d) not planned", s.meta.ID.ID, s.meta.StartOffset, s.meta.EndOffset)
		}
	}
	if len(want) != len(dry.Steps) || dry.Applied {
		t.Fatalf("dry run: %d steps, %d of them segments the broker had written, applied %v", len(dry.Steps), len(want), dry.Applied)
	}
	applied := run("--apply", "--yes")
	if !applied.Applied || len(applied.Published) != 2*len(want) {
		t.Fatalf("--apply: applied %v, %d events published, want %d", applied.Applied, len(applied.Published), 2*len(want))
	}
	after, err := c.readMetadata(ctx)
	must(t, err)
	for _, s := range want {
		r := after.segs[s.meta.ID.ID]
		if r == nil {
			t.Errorf("segment %s not rebuilt", s.meta.ID.ID)
			continue
		}
		w, g := s.meta, r.meta
		if g.ID != w.ID || g.StartOffset != w.StartOffset || g.EndOffset != w.EndOffset || g.MaxTimestampMs != w.MaxTimestampMs ||
			!slices.Equal(g.LeaderEpochs, w.LeaderEpochs) || g.SizeInBytes != w.SizeInBytes || g.TxnIndexEmpty != w.TxnIndexEmpty ||
			fmt.Sprint(r.states) != "[COPY_SEGMENT_STARTED COPY_SEGMENT_FINISHED]" {
			t.Errorf("segment rebuilt as %v %v\n      the broker wrote %v", g, r.states, w)
		}
		if r.custom == nil || !bytes.Equal(r.custom, s.custom) {
			t.Errorf("segment %s rebuilt with custom metadata %x, the RSM returned %x", s.meta.ID.ID, r.custom, s.custom)
		}
	}
	if again := run("--apply", "--yes"); len(again.Steps) != 0 {
		t.Fatalf("second rebuild: %d steps", len(again.Steps))
	}
	t.Logf("rebuilt %d segments of %s from the bucket (%s); %d copies cut short by the stop", len(want), rebuilt.Topic, describe(want), len(cut))

	// Broker 1's RLMM read the deleted topic: it restarts on the new one
	// (with rlmm, without its sidecar's snapshot of the old one).
	c.stopNode(1)
	if c.mode == modeRlmm {
		removeFiles(t, findFiles(t, c.nodeDir(1), topicbased.SnapshotFileName))
	}
	c.startNode(1)
	c.startNode(2)
	waitLeaders(ctx, t, cl, rebuilt.Topic, 1)
	waitFor(ctx, t, fmt.Sprintf("the local log of %s to start at %d or later", rebuilt.Topic, rti.localStart), func() (bool, string, error) {
		local, err := listOffset(ctx, cl, rebuilt.Topic, tsEarliestLocal)
		if err != nil {
			return false, err.Error(), nil
		}
		return local >= rti.localStart, fmt.Sprintf("earliest local offset %d", local), nil
	})
	if ls, err := listOffset(ctx, cl, rebuilt.Topic, tsEarliest); err != nil || ls != 0 {
		t.Fatalf("after the rebuild the log of %s starts at %d (%v), want 0", rebuilt.Topic, ls, err)
	}
	c.consume(ctx, t, rebuilt.Topic, 0, records)
	if out, code := rlmmRun(ctx, t, "verify", "--kafka", bootstrap, "-q"); code != 0 {
		t.Errorf("rlmm verify after the rebuild: exit %d:\n%s", code, out)
	}
}
