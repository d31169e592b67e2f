package layout

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rlmm-go/rlmm"
)

// Kind is the index of an object kind in a layout's Kinds (e.g. the log, an
// index). A layout has at most MaxKinds kinds.
type Kind uint8

// MaxKinds is the most kinds a layout may have (a segment's kinds fit a
// uint8 bit set).
const MaxKinds = 8

// Set is a bit set of Kinds.
type Set uint8

// Has reports whether k is in s.
func (s Set) Has(k Kind) bool { return s&(1<<k) != 0 }

// With returns s with k added.
func (s Set) With(k Kind) Set { return s | 1<<k }

// Ref is what an object key names: a user partition, a segment and the kind
// of the object. Its strings are substrings of the key.
type Ref struct {
	// Prefix is the part of the key before the partition directory ("" for a
	// layout without prefixes).
	Prefix string
	// Dir is the partition directory as the layout writes it; it equals
	// PartitionDir of the partition for a well-placed key.
	Dir         string
	Topic       string
	TopicID     rlmm.Uuid
	Partition   int32
	StartOffset int64
	SegmentID   rlmm.Uuid
	Kind        Kind
}

// TopicIDPartition returns the user partition the key names.
func (r *Ref) TopicIDPartition() rlmm.TopicIDPartition {
	return rlmm.TopicIDPartition{TopicID: r.TopicID, Topic: r.Topic, Partition: r.Partition}
}

// Expect is what a layout expects in remote storage for one segment.
type Expect struct {
	// Required are the kinds every copied segment has; Optional those it may
	// have (e.g. a transaction index).
	Required, Optional Set
	// DataKind is the kind holding the records: without it the segment's
	// data is lost.
	DataKind Kind
	// DataSize is the size the DataKind object must have, or -1 when the
	// layout does not record it (a compressing or encrypting manager).
	DataSize int64
	// TotalSize is the sum of the sizes of all the segment's objects, or -1
	// when the layout does not record it.
	TotalSize int64
	// Stem, when not empty, is the key of the segment's objects without the
	// "."+extension, taken from the segment's custom metadata; it overrides
	// the computed key. Prefix is the part of Stem the store must list.
	Stem, Prefix string
}

// Layout maps segments to object keys and back for one remote storage
// manager. Implementations are safe for concurrent use.
type Layout interface {
	// Name is the name given to --layout.
	Name() string
	// Kinds names the object kinds (the extensions), indexed by Kind.
	Kinds() []string
	// Prefix is the part of every computed key before the partition
	// directory: where the store lists.
	Prefix() string
	// PartitionDir returns the directory part (Ref.Dir) of tp's keys.
	PartitionDir(tp rlmm.TopicIDPartition) string
	// Expect returns what segment m of tp calls for. The error (wrapping
	// rlmm.ErrCorrupt) says the segment's custom metadata cannot be
	// decoded; e then holds the computed expectation.
	Expect(tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata) (e Expect, err error)
	// Key returns the computed key of the k object of segment m of tp.
	Key(tp rlmm.TopicIDPartition, m *rlmm.SegmentMetadata, k Kind) string
	// Parse returns what key names; ok is false for a key this layout never
	// writes.
	Parse(key string) (r Ref, ok bool)
	// KindOf returns the kind whose extension ext (without the dot) is.
	KindOf(ext string) (Kind, bool)
}

// Options configure a layout.
type Options struct {
	// Prefix is the key prefix the storage manager was configured with
	// (Aiven's key.prefix); layouts without one reject a non-empty Prefix.
	Prefix string
}

// Factory builds a layout from options.
type Factory func(Options) (Layout, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
)

// Register makes a layout available to New under name. It panics on a
// duplicate name (a programming error caught at init).
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("layout: Register called twice for " + name)
	}
	registry[name] = f
}

// Names returns the registered layout names, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New returns the layout registered under name. An unknown name is an
// error wrapping rlmm.ErrInvalidArgument that lists the known ones.
func New(name string, o Options) (Layout, error) {
	registryMu.Lock()
	f := registry[name]
	registryMu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("%w: unknown layout %q (known: %s)", rlmm.ErrInvalidArgument, name, strings.Join(Names(), ", "))
	}
	return f(o)
}
