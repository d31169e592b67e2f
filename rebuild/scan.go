package rebuild

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// Limits of the small objects read whole.
const (
	maxCheckpointBytes = 1 << 20
	maxManifestBytes   = 16 << 20
)

// ScanOptions say what to scan.
type ScanOptions struct {
	Layout layout.Layout
	// Store lists the objects, Opener reads them (the same storage).
	Store  store.Store
	Opener Opener
	// Topic, when not empty, keeps only that topic's segments.
	Topic string
	// Exclude, when not empty, is a key prefix left out of the scan: rlmm
	// repair's quarantine, whose orphans must not come back as segments.
	Exclude string
	// AivenFields (layout aiven) are the custom metadata fields Aiven's
	// plugin was configured to return (its custom.metadata.fields.include):
	// every rebuilt segment gets them, computed from its objects, so its
	// FINISHED event carries the bytes the plugin returned when it copied
	// the segment. None: custom metadata only for a segment under another
	// prefix than the configured one.
	AivenFields layout.AivenFieldSet
}

// Segment is a segment reconstructed from remote storage.
type Segment struct {
	// Meta is its metadata as COPY_SEGMENT_FINISHED, with CustomMetadata the
	// custom metadata of the FINISHED event (nil for none). BrokerID and
	// EventTimestampMs are left zero: the plan sets them.
	Meta rlmm.SegmentMetadata
	// Keys are its objects, sorted.
	Keys []string
	// Warnings are what is odd about it but does not stop the rebuild.
	Warnings []string
}

// Problem is a segment found in storage that cannot be rebuilt, and why.
type Problem struct {
	TopicIDPartition string   `json:"topicIdPartition"`
	SegmentID        string   `json:"segmentId"`
	StartOffset      int64    `json:"startOffset"`
	Keys             []string `json:"keys"`
	Detail           string   `json:"detail"`
}

// Found is what Scan found.
type Found struct {
	Layout string `json:"layout"`
	Store  string `json:"store"`
	// Objects and Bytes count the objects listed (of the topic, with
	// ScanOptions.Topic); Ignored the keys the layout never writes.
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
	Ignored int64 `json:"ignoredKeys"`
	// Excluded counts the objects under ScanOptions.Exclude.
	Excluded int64     `json:"excluded,omitempty"`
	Segments []Segment `json:"-"`
	Problems []Problem `json:"problems"`
}

type segKey struct {
	topicID   rlmm.Uuid
	partition int32
	id        rlmm.Uuid
}

type group struct {
	ref      layout.Ref
	objs     [layout.MaxKinds]*store.Object
	conflict string
}

// Scan lists the storage under the layout's prefix and reconstructs every
// segment whose objects it finds. A segment that cannot be rebuilt (some
// objects missing, a damaged log, checkpoint or manifest) is a Problem; the
// error is for a storage that cannot be listed or ctx ending.
func Scan(ctx context.Context, o ScanOptions) (*Found, error) {
	f := &Found{Layout: o.Layout.Name(), Store: o.Store.Name()}
	groups := map[segKey]*group{}
	err := o.Store.List(ctx, []string{o.Layout.Prefix()}, func(page []store.Object) error {
		for i := range page {
			obj := page[i]
			if o.Exclude != "" && strings.HasPrefix(obj.Key, o.Exclude) {
				f.Excluded++
				continue
			}
			ref, ok := o.Layout.Parse(obj.Key)
			if !ok {
				f.Ignored++
				continue
			}
			if o.Topic != "" && ref.Topic != o.Topic {
				continue
			}
			f.Objects++
			f.Bytes += obj.Size
			k := segKey{ref.TopicID, ref.Partition, ref.SegmentID}
			g := groups[k]
			if g == nil {
				g = &group{ref: ref}
				groups[k] = g
			}
			switch {
			case ref.StartOffset != g.ref.StartOffset || ref.Topic != g.ref.Topic || ref.Prefix != g.ref.Prefix:
				g.conflict = fmt.Sprintf("objects %s and %s name one segment id with different start offsets, topics or prefixes", keyOf(g), obj.Key)
			case g.objs[ref.Kind] != nil:
				g.conflict = fmt.Sprintf("objects %s and %s are the same kind of one segment", g.objs[ref.Kind].Key, obj.Key)
			default:
				g.objs[ref.Kind] = &obj
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sorted := make([]*group, 0, len(groups))
	for _, g := range groups {
		sorted = append(sorted, g)
	}
	slices.SortFunc(sorted, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.ref.Topic, b.ref.Topic), slices.Compare(a.ref.TopicID[:], b.ref.TopicID[:]),
			cmp.Compare(a.ref.Partition, b.ref.Partition), cmp.Compare(a.ref.StartOffset, b.ref.StartOffset),
			slices.Compare(a.ref.SegmentID[:], b.ref.SegmentID[:]))
	})
	for _, g := range sorted {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seg, err := rebuildSegment(ctx, o, g)
		if err != nil {
			f.Problems = append(f.Problems, Problem{TopicIDPartition: g.ref.TopicIDPartition().String(),
				SegmentID: g.ref.SegmentID.String(), StartOffset: g.ref.StartOffset, Keys: g.keys(), Detail: err.Error()})
			continue
		}
		f.Segments = append(f.Segments, seg)
	}
	return f, nil
}

func keyOf(g *group) string {
	for _, o := range g.objs {
		if o != nil {
			return o.Key
		}
	}
	return ""
}

func (g *group) keys() []string {
	var out []string
	for _, o := range g.objs {
		if o != nil {
			out = append(out, o.Key)
		}
	}
	slices.Sort(out)
	return out
}

// rebuildSegment reconstructs one segment from its objects.
func rebuildSegment(ctx context.Context, o ScanOptions, g *group) (Segment, error) {
	if g.conflict != "" {
		return Segment{}, fmt.Errorf("%s", g.conflict)
	}
	tp := g.ref.TopicIDPartition()
	seg := Segment{Keys: g.keys()}
	m := &seg.Meta
	m.ID = rlmm.SegmentID{TopicIDPartition: tp, ID: g.ref.SegmentID}
	m.StartOffset = g.ref.StartOffset
	m.State = rlmm.CopySegmentFinished
	exp, _ := o.Layout.Expect(tp, &rlmm.SegmentMetadata{TxnIndexEmpty: true})
	var lacks []string
	kinds := o.Layout.Kinds()
	for k := range kinds {
		if exp.Required.Has(layout.Kind(k)) && g.objs[k] == nil {
			lacks = append(lacks, "."+kinds[k])
		}
	}
	if len(lacks) > 0 {
		return seg, fmt.Errorf("incomplete: no %s object (a copy that did not finish, or a deletion under way)", strings.Join(lacks, ", "))
	}
	var err error
	switch o.Layout.Name() {
	case layout.LocalName:
		err = rebuildLocal(ctx, o, g, &seg)
	case layout.AivenName:
		err = rebuildAiven(ctx, o, g, &seg)
	default:
		err = fmt.Errorf("%w: rebuild does not know layout %q", rlmm.ErrInvalidArgument, o.Layout.Name())
	}
	if err != nil {
		return seg, err
	}
	if err := m.Validate(); err != nil {
		return seg, err
	}
	return seg, nil
}

// rebuildLocal reads a LocalTieredStorage segment: the log's batch headers
// and the leader-epoch checkpoint.
func rebuildLocal(ctx context.Context, o ScanOptions, g *group, seg *Segment) error {
	m := &seg.Meta
	logObj := g.objs[layout.LocalLog]
	if logObj.Size > math.MaxInt32 {
		return fmt.Errorf("%s: %d bytes, more than a Kafka segment may hold (2 GiB)", logObj.Key, logObj.Size)
	}
	r, err := o.Opener.Open(ctx, logObj.Key)
	if err != nil {
		return fmt.Errorf("opening %s: %w", logObj.Key, err)
	}
	sum, err := ReadLogSummary(r, logObj.Size, logObj.Key)
	r.Close()
	if err != nil {
		return err
	}
	if sum.FirstOffset != m.StartOffset && !(sum.OldFormat && sum.FirstOffset > m.StartOffset) {
		return fmt.Errorf("%s: its first batch is at offset %d, its name says %d", logObj.Key, sum.FirstOffset, m.StartOffset)
	}
	m.EndOffset = sum.LastOffset
	m.MaxTimestampMs = sum.MaxTimestampMs
	if m.MaxTimestampMs < 0 {
		// LogSegment.largestTimestamp without any timestamp: the file's
		// modification time.
		m.MaxTimestampMs = logObj.Modified.UnixMilli()
		seg.Warnings = append(seg.Warnings, "no batch has a timestamp: the largest timestamp is the log file's modification time")
	}
	m.SizeInBytes = int32(logObj.Size)
	txn := g.objs[layout.LocalTxnIndex]
	m.TxnIndexEmpty = txn == nil || txn.Size == 0

	cpObj := g.objs[layout.LocalLeaderEpoch]
	b, err := readSmall(ctx, o.Opener, cpObj.Key, cpObj.Size, maxCheckpointBytes)
	if err != nil {
		return err
	}
	entries, err := ParseLeaderEpochCheckpoint(b, cpObj.Key)
	if err != nil {
		return err
	}
	m.LeaderEpochs = EpochsInRange(entries, m.StartOffset, m.EndOffset)
	if len(m.LeaderEpochs) == 0 {
		return fmt.Errorf("%s: no leader epoch covers offsets %d..%d (entries %v)", cpObj.Key, m.StartOffset, m.EndOffset, entries)
	}
	if !sum.OldFormat && len(sum.Epochs) > 0 && !slices.Equal(sum.Epochs, m.LeaderEpochs) {
		seg.Warnings = append(seg.Warnings, fmt.Sprintf("the batches' leader epochs %v differ from the checkpoint's %v (the checkpoint's are used, as Kafka's)",
			sum.Epochs, m.LeaderEpochs))
	}
	return nil
}

// rebuildAiven reads an Aiven segment's manifest.
func rebuildAiven(ctx context.Context, o ScanOptions, g *group, seg *Segment) error {
	m := &seg.Meta
	mo := g.objs[layout.AivenManifest]
	b, err := readSmall(ctx, o.Opener, mo.Key, mo.Size, maxManifestBytes)
	if err != nil {
		return err
	}
	man, err := ParseAivenManifest(b, mo.Key)
	if err != nil {
		return err
	}
	tp := g.ref.TopicIDPartition()
	if man.TP != tp || man.SegmentID != g.ref.SegmentID || man.StartOffset != g.ref.StartOffset {
		return fmt.Errorf("%s: the manifest names segment %s of %s at offset %d, its key %s of %s at offset %d",
			mo.Key, man.SegmentID, man.TP, man.StartOffset, g.ref.SegmentID, tp, g.ref.StartOffset)
	}
	if man.OriginalFileSize > math.MaxInt32 {
		return fmt.Errorf("%s: original file size %d, more than a Kafka segment may hold (2 GiB)", mo.Key, man.OriginalFileSize)
	}
	m.EndOffset, m.MaxTimestampMs = man.EndOffset, man.MaxTimestampMs
	m.LeaderEpochs = man.LeaderEpochs
	m.SizeInBytes = int32(man.OriginalFileSize)
	m.TxnIndexEmpty = man.TxnIndexEmpty
	fields := o.AivenFields
	if g.ref.Prefix != o.Layout.Prefix() {
		// Objects under another prefix than the configured one: the
		// custom metadata says where, as the plugin does with
		// custom.metadata.fields.include OBJECT_PREFIX.
		fields.ObjectPrefix = true
		seg.Warnings = append(seg.Warnings, fmt.Sprintf("objects under prefix %q, not the configured %q: the FINISHED event's custom metadata names it, "+
			"where Aiven's plugin reads the log and indexes; it reads the manifest, and deletes the objects, under its configured prefix "+
			"(as of 1.0.0): copy the manifest there to read the segment", g.ref.Prefix, o.Layout.Prefix()))
	}
	if fields.Any() {
		var total int64
		for _, obj := range g.objs {
			if obj != nil {
				total += obj.Size
			}
		}
		main := strings.TrimSuffix(mo.Key[len(g.ref.Prefix):], "."+o.Layout.Kinds()[layout.AivenManifest])
		m.CustomMetadata = layout.EncodeAivenCustomMetadata(fields.Fields(total, g.ref.Prefix, main))
	}
	return nil
}
