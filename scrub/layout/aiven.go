package layout

import (
	"strconv"
	"strings"

	"github.com/rlmm-go/rlmm"
)

// AivenName is the name of Aiven's tiered-storage-for-apache-kafka layout.
const AivenName = "aiven"

// The kinds of Aiven's layout (its ObjectKeyFactory.Suffix).
const (
	AivenLog Kind = iota
	AivenIndexes
	AivenManifest
)

var aivenKinds = []string{"log", "indexes", "rsm-manifest"}

func init() { Register(AivenName, newAiven) }

// aiven is Aiven's tiered-storage-for-apache-kafka: three objects per
// segment, <prefix><topic>-<topicId>/<partition>/<20-digit start offset>-
// <segment id>.<log|indexes|rsm-manifest>. The log may be compressed or
// encrypted, so its size is not the segment's; the custom metadata's remote
// size (tag 0), when present, is the sum of the three objects' sizes.
type aiven struct{ prefix string }

func newAiven(o Options) (Layout, error) { return aiven{prefix: o.Prefix}, nil }

func (aiven) Name() string     { return AivenName }
func (aiven) Kinds() []string  { return aivenKinds }
func (a aiven) Prefix() string { return a.prefix }
func (aiven) KindOf(ext string) (Kind, bool) {
	switch ext {
	case "log":
		return AivenLog, true
	case "indexes":
		return AivenIndexes, true
	case "rsm-manifest":
		return AivenManifest, true
	}
	return 0, false
}

func (aiven) PartitionDir(tp rlmm.TopicIDPartition) string {
	return tp.Topic + "-" + tp.TopicID.String() + "/" + strconv.FormatInt(int64(tp.Partition), 10)
}

// mainPath appends Aiven's main path (the key without prefix and suffix).
func (a aiven) mainPath(b []byte, tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata) []byte {
	b = append(b, tp.Topic...)
	b = append(b, '-')
	b = appendID(b, tp.TopicID)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(tp.Partition), 10)
	b = append(b, '/')
	b = appendOffset(b, m.StartOffset)
	b = append(b, '-')
	return appendID(b, m.ID.ID)
}

func (a aiven) Expect(tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata) (Expect, error) {
	e := Expect{Required: Set(0).With(AivenLog).With(AivenIndexes).With(AivenManifest),
		DataKind: AivenLog, DataSize: -1, TotalSize: -1}
	if len(m.CustomMetadata) == 0 {
		return e, nil
	}
	f, err := decodeAiven(m.CustomMetadata)
	if err != nil {
		return e, err
	}
	if f.hasRemoteSize {
		e.TotalSize = f.remoteSize
	}
	if f.prefix == nil && f.key == nil {
		return e, nil
	}
	var buf [160]byte
	computed := a.mainPath(buf[:0], tp, m)
	prefixSame := f.prefix == nil || string(f.prefix) == a.prefix
	if prefixSame && (f.key == nil || string(f.key) == string(computed)) {
		return e, nil
	}
	prefix, main := a.prefix, computed
	if f.prefix != nil {
		prefix = string(f.prefix)
	}
	if f.key != nil {
		main = f.key
	}
	e.Stem, e.Prefix = prefix+string(main), prefix
	return e, nil
}

func (a aiven) Key(tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata, k Kind) string {
	b := make([]byte, 0, len(a.prefix)+96)
	b = append(b, a.prefix...)
	b = a.mainPath(b, tp, m)
	b = append(b, '.')
	b = append(b, aivenKinds[k]...)
	return string(b)
}

// Parse reads "<prefix><topic>-<topicId>/<partition>/<offset>-<id>.<ext>". A
// key without the configured prefix is read from the right (the last three
// path elements), its Prefix then being whatever precedes them.
func (a aiven) Parse(key string) (Ref, bool) {
	rest, prefix := key, ""
	if strings.HasPrefix(key, a.prefix) {
		rest, prefix = key[len(a.prefix):], a.prefix
	}
	s2 := strings.LastIndexByte(rest, '/')
	if s2 < 0 {
		return Ref{}, false
	}
	s1 := strings.LastIndexByte(rest[:s2], '/')
	if s1 < 0 {
		return Ref{}, false
	}
	topicDir := rest[:s1]
	if prefix != a.prefix || strings.IndexByte(topicDir, '/') >= 0 {
		// Not under the configured prefix (or a deeper key): the topic
		// directory is the last element before the partition.
		s0 := strings.LastIndexByte(topicDir, '/')
		prefix = key[:len(key)-len(rest)+s0+1]
		topicDir = topicDir[s0+1:]
	}
	off, id, ext, ok := parseFile(rest[s2+1:])
	if !ok {
		return Ref{}, false
	}
	kind, ok := a.KindOf(ext)
	if !ok {
		return Ref{}, false
	}
	part, ok := parsePartition(rest[s1+1 : s2])
	if !ok {
		return Ref{}, false
	}
	topic, topicID, ok := splitTopicID(topicDir)
	if !ok {
		return Ref{}, false
	}
	dirStart := len(prefix)
	return Ref{Prefix: prefix, Dir: key[dirStart : len(key)-len(rest)+s2], Topic: topic, TopicID: topicID,
		Partition: part, StartOffset: off, SegmentID: id, Kind: kind}, true
}
