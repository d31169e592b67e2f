package scrubtest

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/wire"
)

// Object is an object the storage holds for the fixture.
type Object struct {
	Key  string
	Size int64
}

// Segment is a segment of the fixture: its final metadata and its objects.
type Segment struct {
	TP   rlmm.TopicIDPartition
	Meta rlmm.SegmentMetadata
	// Objects are what the storage manager writes for it.
	Objects []Object
}

// Fixture is a metadata log's segments and the storage's objects.
type Fixture struct {
	Layout     layout.Layout
	Partitions []rlmm.TopicIDPartition
	Segments   []*Segment
	// Stray are objects no segment owns (planted orphans).
	Stray []Object
	// CustomMetadata: record Aiven's custom metadata (remote size, prefix,
	// key) in each COPY_SEGMENT_FINISHED event, as Aiven's plugin does when
	// configured to include the fields.
	CustomMetadata bool
	next           uint64
}

// Options shape a fixture.
type Options struct {
	Layout               layout.Layout
	Topics               int
	PartitionsPerTopic   int
	SegmentsPerPartition int
	// CustomMetadata: see Fixture.CustomMetadata (Aiven's layout only).
	CustomMetadata bool
}

// New returns a fixture of COPY_SEGMENT_FINISHED segments with all their
// objects. Ids are deterministic.
func New(o Options) *Fixture {
	f := &Fixture{Layout: o.Layout, CustomMetadata: o.CustomMetadata, next: 1}
	for t := range o.Topics {
		topicID := f.id()
		for p := range o.PartitionsPerTopic {
			tp := rlmm.TopicIDPartition{TopicID: topicID, Topic: fmt.Sprintf("scrub-%d", t), Partition: int32(p)}
			f.Partitions = append(f.Partitions, tp)
			for s := range o.SegmentsPerPartition {
				f.Add(tp, int64(s)*100, rlmm.CopySegmentFinished)
			}
		}
	}
	return f
}

// id returns a fresh deterministic id that prints without a leading '-'.
func (f *Fixture) id() rlmm.Uuid {
	for {
		var u rlmm.Uuid
		binary.BigEndian.PutUint64(u[:8], 0x5c4b_0000_0000_4000|f.next*0x9E37_79B9)
		binary.BigEndian.PutUint64(u[8:], 0x8000_0000_0000_0000|f.next)
		f.next++
		if u.String()[0] != '-' {
			return u
		}
	}
}

// Add adds a segment of tp starting at start in state and returns it. Its
// Objects are those its storage manager writes; Fixture.Objects leaves out
// those of a DELETE_SEGMENT_FINISHED segment (the deletion removed them).
func (f *Fixture) Add(tp rlmm.TopicIDPartition, start int64, state rlmm.SegmentState) *Segment {
	id := f.id()
	logSize := int64(900 + (f.next*37)%200)
	m := rlmm.SegmentMetadata{
		ID: rlmm.SegmentID{TopicIDPartition: tp, ID: id}, StartOffset: start, EndOffset: start + 99,
		MaxTimestampMs: 1_700_000_000_000 + start, BrokerID: 1, EventTimestampMs: 1_700_000_000_000 + start,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: start}}, SizeInBytes: int32(logSize),
		State: state, TxnIndexEmpty: true,
	}
	s := &Segment{TP: tp, Meta: m}
	var total int64
	for k, ext := range f.Layout.Kinds() {
		size := objectSize(f.Layout.Name(), ext, logSize)
		if size < 0 {
			continue
		}
		total += size
		s.Objects = append(s.Objects, Object{Key: f.Layout.Key(tp, &m, layout.Kind(k)), Size: size})
	}
	if f.CustomMetadata {
		p := f.Layout.Prefix()
		s.Meta.CustomMetadata = encodeAiven(total, p, s.Objects[0].Key[len(p):len(s.Objects[0].Key)-len(".log")])
	}
	f.Segments = append(f.Segments, s)
	return s
}

// objectSize is the size of a fixture object of kind ext (-1: not written).
// The local layout's log is the segment's bytes; the rest are small.
func objectSize(layoutName, ext string, logSize int64) int64 {
	switch ext {
	case "log":
		return logSize
	case "txnindex":
		return -1 // TxnIndexEmpty
	case "index", "indexes":
		return 80
	case "timeindex":
		return 120
	case "snapshot":
		return 10
	case "leader_epoch_checkpoint":
		return 24
	case "rsm-manifest":
		return 300
	}
	return 16
}

// StrayObject plants an object named like a segment object of tp with an
// id the metadata never saw, and returns it.
func (f *Fixture) StrayObject(tp rlmm.TopicIDPartition, start int64) Object {
	m := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: f.id()}, StartOffset: start}
	o := Object{Key: f.Layout.Key(tp, &m, 0), Size: 777}
	f.Stray = append(f.Stray, o)
	return o
}

// Objects returns every object the storage holds: the segments' (but
// those of DELETE_SEGMENT_FINISHED segments) and the strays.
func (f *Fixture) Objects() []Object {
	var out []Object
	for _, s := range f.Segments {
		if s.Meta.State != rlmm.DeleteSegmentFinished {
			out = append(out, s.Objects...)
		}
	}
	return append(out, f.Stray...)
}

// Publish writes the metadata of segs (every segment when none is given) to
// log as brokers do: the COPY_SEGMENT_STARTED add, then one update per later
// state (the custom metadata in the COPY_SEGMENT_FINISHED update), each in
// the metadata partition Kafka's partitioner gives its user partition.
func (f *Fixture) Publish(ctx context.Context, log eventlog.Log, segs ...*Segment) error {
	n := log.Partitions()
	if len(segs) == 0 {
		segs = f.Segments
	}
	for _, s := range segs {
		part := wire.MetadataPartition(s.TP, n)
		add := s.Meta
		add.State, add.CustomMetadata = rlmm.CopySegmentStarted, nil
		if err := publish(ctx, log, part, wire.SegmentEvent(add)); err != nil {
			return err
		}
		for _, st := range []rlmm.SegmentState{rlmm.CopySegmentFinished, rlmm.DeleteSegmentStarted, rlmm.DeleteSegmentFinished} {
			if s.Meta.State < st {
				break
			}
			u := rlmm.SegmentUpdate{ID: s.Meta.ID, EventTimestampMs: s.Meta.EventTimestampMs + 1, State: st, BrokerID: 1}
			if st == rlmm.CopySegmentFinished {
				u.CustomMetadata = s.Meta.CustomMetadata
			}
			if err := publish(ctx, log, part, wire.UpdateEvent(u)); err != nil {
				return err
			}
		}
	}
	return nil
}

func publish(ctx context.Context, log eventlog.Log, part int32, ev wire.Event) error {
	b, err := wire.AppendEvent(nil, &ev)
	if err != nil {
		return err
	}
	_, err = log.Publish(ctx, part, b)
	return err
}

// Content returns the deterministic bytes of an object of size bytes.
func Content(size int64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// WriteDir writes objs as files under root (keys are relative paths), with
// modification time mtime.
func WriteDir(root string, objs []Object, mtime time.Time) error {
	for _, o := range objs {
		path := filepath.Join(root, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, Content(o.Size), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			return err
		}
	}
	return nil
}

// WriteLog creates rlmm's embedded log in dir with metadataPartitions
// partitions, publishes segs (every segment when none is given) into it and
// closes it.
func (f *Fixture) WriteLog(ctx context.Context, dir string, metadataPartitions int32, segs ...*Segment) error {
	l, err := filelog.Open(dir, filelog.Options{Partitions: metadataPartitions})
	if err != nil {
		return err
	}
	if err := f.Publish(ctx, l, segs...); err != nil {
		l.Close()
		return err
	}
	return l.Close()
}

// encodeAiven is Aiven's custom metadata with all three fields, as its
// plugin records them with custom.metadata.fields.include=REMOTE_SIZE,
// OBJECT_PREFIX,OBJECT_KEY (the default includes none).
func encodeAiven(remoteSize int64, prefix, mainPath string) []byte {
	return layout.EncodeAivenCustomMetadata(layout.AivenFields{
		RemoteSize: remoteSize, HasRemoteSize: true,
		ObjectPrefix: prefix, HasObjectPrefix: true,
		ObjectKey: mainPath, HasObjectKey: true,
	})
}
