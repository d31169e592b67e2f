package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
)

// file is a whole snapshot held in memory, for the tests.
type file struct {
	head   Head
	states []memory.PartitionState
}

// memFile is an io.WriterAt over a growing byte slice.
type memFile struct{ b []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.b) {
		f.b = append(f.b, make([]byte, end-len(f.b))...)
	}
	return copy(f.b[off:], p), nil
}

// encode writes f with a Writer (version 4), committed offsets given
// after the blocks as topicbased gives them, and returns the file's bytes.
func encode(t testing.TB, f *file) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, f.head.LogID, f.head.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.states {
		if err := w.WriteBlock(&f.states[i]); err != nil {
			t.Fatal(err)
		}
	}
	for mp, c := range f.head.Committed {
		must(t, w.SetCommitted(int32(mp), c))
	}
	size, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(out.Len()) {
		t.Fatalf("Finish says %d bytes, %d written", size, out.Len())
	}
	return out.Bytes()
}

// encodeV3 writes f with a WriterV3 (version 3) and returns the file's
// bytes.
func encodeV3(t testing.TB, f *file) []byte {
	t.Helper()
	tps := make([]rlmm.TopicIDPartition, len(f.states))
	for i := range f.states {
		tps[i] = f.states[i].TopicIDPartition
	}
	var out memFile
	w, err := NewWriterV3(&out, f.head, tps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.states {
		if err := w.WriteBlock(&f.states[i]); err != nil {
			t.Fatal(err)
		}
	}
	size, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(out.b)) {
		t.Fatalf("Finish says %d bytes, %d written", size, len(out.b))
	}
	return out.b
}

// decode opens, verifies and decodes a whole file held in memory.
func decode(data []byte) (*file, error) {
	r, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	if err := r.Verify(context.Background(), 2); err != nil {
		return nil, err
	}
	f := &file{head: r.Head(), states: make([]memory.PartitionState, len(r.Blocks()))}
	var buf []byte
	for k, blk := range r.Blocks() {
		if buf, err = r.ReadBlock(k, buf); err != nil {
			return nil, err
		}
		if f.states[k], err = DecodeState(buf, blk); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func uuidN(n uint64) rlmm.Uuid {
	var u rlmm.Uuid
	binary.BigEndian.PutUint64(u[8:], n)
	u[0] = 0x40
	return u
}

func topicPartition(topic string, topicN uint64, partition int32) rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: uuidN(topicN), Topic: topic, Partition: partition}
}

// segment returns a COPY_SEGMENT_STARTED segment of tp; epochs are pairs of
// epoch and start offset (default: epoch 0 from start).
func segment(tp rlmm.TopicIDPartition, id uint64, start, end int64, epochs ...int64) rlmm.SegmentMetadata {
	if len(epochs) == 0 {
		epochs = []int64{0, start}
	}
	m := rlmm.SegmentMetadata{
		ID:          rlmm.SegmentID{TopicIDPartition: tp, ID: uuidN(1_000_000 + id)},
		StartOffset: start, EndOffset: end, MaxTimestampMs: 1000 + end, BrokerID: 1,
		EventTimestampMs: 500, SizeInBytes: int32(end - start + 1), State: rlmm.CopySegmentStarted,
		TxnIndexEmpty: true,
	}
	for i := 0; i+1 < len(epochs); i += 2 {
		m.LeaderEpochs = append(m.LeaderEpochs, rlmm.EpochStart{Epoch: int32(epochs[i]), StartOffset: epochs[i+1]})
	}
	return m
}

func sample() *file {
	tp := topicPartition("snap", 3, 7)
	a := segment(tp, 1, 0, 100, 0, 0, 1, 20, 2, 80)
	a.CustomMetadata = []byte{}
	a.TxnIndexEmpty = false
	b := segment(tp, 2, 101, 200, 2, 101)
	b.State = rlmm.CopySegmentFinished
	b.CustomMetadata = []byte("plugin data")
	c := segment(tp, 3, -0, 0)
	c.MaxTimestampMs, c.EventTimestampMs, c.BrokerID, c.SizeInBytes = -1, 1<<62, -7, 1<<31-1
	return &file{
		head: Head{LogID: uuidN(77), Partitions: 4, Committed: []int64{-1, 0, 1 << 40, 12}},
		states: []memory.PartitionState{
			{TopicIDPartition: tp, Segments: []rlmm.SegmentMetadata{a, b, c},
				HighestOffsets: []memory.EpochOffset{{Epoch: 0, Offset: 19}, {Epoch: 2, Offset: 200}},
				Delete:         &rlmm.PartitionDelete{TopicIDPartition: tp, State: rlmm.DeletePartitionStarted, EventTimestampMs: 5, BrokerID: 3}},
			{TopicIDPartition: topicPartition("empty-but-deleted", 4, 0)},
		},
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
