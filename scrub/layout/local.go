package layout

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlmm-go/rlmm"
)

// LocalName is the name of Kafka's LocalTieredStorage layout.
const LocalName = "local"

// The kinds of LocalTieredStorage, in the order of localKinds.
const (
	LocalLog Kind = iota
	LocalIndex
	LocalTimeIndex
	LocalSnapshot
	LocalLeaderEpoch
	LocalTxnIndex
)

var localKinds = []string{"log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint", "txnindex"}

func init() { Register(LocalName, newLocal) }

// local is Kafka 4.3.1's LocalTieredStorage: one directory per user
// partition, <topic>-<partition>-<topicId>, under
// <rsm.config.dir>/kafka-tiered-storage, holding six files per segment
// named <20-digit start offset>-<segment id>.<ext>. The log file is the
// broker's segment file copied byte for byte, so its size is the segment's
// SizeInBytes. The transaction index exists only when the segment has one
// (optional: metadata written before Kafka 4.0 does not say).
type local struct{}

func newLocal(o Options) (Layout, error) {
	if o.Prefix != "" {
		return nil, fmt.Errorf("%w: the local layout takes no prefix (got %q): give --remote-dir the directory LocalTieredStorage writes to",
			rlmm.ErrInvalidArgument, o.Prefix)
	}
	return local{}, nil
}

func (local) Name() string    { return LocalName }
func (local) Kinds() []string { return localKinds }
func (local) Prefix() string  { return "" }

func (local) PartitionDir(tp rlmm.TopicIDPartition) string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10) + "-" + tp.TopicID.String()
}

func (local) Expect(_ rlmm.TopicIDPartition, m *rlmm.SegmentMetadata) (Expect, error) {
	e := Expect{
		Required: Set(0).With(LocalLog).With(LocalIndex).With(LocalTimeIndex).With(LocalSnapshot).With(LocalLeaderEpoch),
		DataKind: LocalLog, DataSize: int64(m.SizeInBytes), TotalSize: -1,
	}
	if !m.TxnIndexEmpty {
		e.Optional = e.Optional.With(LocalTxnIndex)
	}
	return e, nil
}

func (l local) Key(tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata, k Kind) string {
	b := make([]byte, 0, 96)
	b = append(b, l.PartitionDir(tp)...)
	b = append(b, '/')
	b = appendOffset(b, m.StartOffset)
	b = append(b, '-')
	b = appendID(b, m.ID.ID)
	b = append(b, '.')
	b = append(b, localKinds[k]...)
	return string(b)
}

func (local) KindOf(ext string) (Kind, bool) {
	switch ext {
	case "log":
		return LocalLog, true
	case "index":
		return LocalIndex, true
	case "timeindex":
		return LocalTimeIndex, true
	case "snapshot":
		return LocalSnapshot, true
	case "leader_epoch_checkpoint":
		return LocalLeaderEpoch, true
	case "txnindex":
		return LocalTxnIndex, true
	}
	return 0, false
}

// Parse reads "<topic>-<partition>-<topicId>/<offset>-<id>.<ext>".
func (l local) Parse(key string) (Ref, bool) {
	slash := strings.IndexByte(key, '/')
	if slash < 0 || strings.IndexByte(key[slash+1:], '/') >= 0 {
		return Ref{}, false
	}
	dir, file := key[:slash], key[slash+1:]
	off, id, ext, ok := parseFile(file)
	if !ok {
		return Ref{}, false
	}
	kind, ok := l.KindOf(ext)
	if !ok {
		return Ref{}, false
	}
	topicPart, topicID, ok := splitTopicID(dir)
	if !ok {
		return Ref{}, false
	}
	dash := strings.LastIndexByte(topicPart, '-')
	if dash <= 0 {
		return Ref{}, false
	}
	part, ok := parsePartition(topicPart[dash+1:])
	if !ok {
		return Ref{}, false
	}
	return Ref{Dir: dir, Topic: topicPart[:dash], TopicID: topicID, Partition: part,
		StartOffset: off, SegmentID: id, Kind: kind}, true
}
