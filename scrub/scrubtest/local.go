package scrubtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
)

// LocalPlant is one finding of each kind planted in the directory a real
// broker's LocalTieredStorage wrote: Lost's log deleted (missing),
// Truncated's log cut to TruncatedTo bytes (size mismatch), Partial's time
// index deleted (partial), a stray log of an id the metadata never saw
// (the one deletable orphan, two hours old), and the files of Started, a
// copy the caller must record as COPY_SEGMENT_STARTED in the metadata
// (protected orphans, two hours old too).
type LocalPlant struct {
	Root                     string
	TP                       rlmm.TopicIDPartition
	Lost, Truncated, Partial rlmm.SegmentMetadata
	TruncatedTo              int64
	StrayKey                 string
	Started                  rlmm.SegmentMetadata
	StartedKeys              []string
}

// PlantLocal plants the findings among live, three or more
// COPY_SEGMENT_FINISHED segments of tp whose files are under remoteDir
// (LocalTieredStorage's rsm.config.dir).
func PlantLocal(remoteDir string, tp rlmm.TopicIDPartition, live []rlmm.SegmentMetadata) (*LocalPlant, error) {
	if len(live) < 3 {
		return nil, fmt.Errorf("planting needs 3 finished segments, got %d", len(live))
	}
	l, err := layout.New(layout.LocalName, layout.Options{})
	if err != nil {
		return nil, err
	}
	p := &LocalPlant{Root: filepath.Join(remoteDir, "kafka-tiered-storage"), TP: tp,
		Lost: live[0], Truncated: live[1], Partial: live[2], TruncatedTo: 1000}
	path := func(key string) string { return filepath.Join(p.Root, filepath.FromSlash(key)) }
	if err := os.Remove(path(l.Key(tp, &p.Lost, layout.LocalLog))); err != nil {
		return nil, err
	}
	if err := os.Truncate(path(l.Key(tp, &p.Truncated, layout.LocalLog)), p.TruncatedTo); err != nil {
		return nil, err
	}
	if err := os.Remove(path(l.Key(tp, &p.Partial, layout.LocalTimeIndex))); err != nil {
		return nil, err
	}
	old := time.Now().Add(-2 * time.Hour)
	write := func(key string) error {
		if err := os.WriteFile(path(key), Content(1000), 0o644); err != nil {
			return err
		}
		return os.Chtimes(path(key), old, old)
	}
	stray := rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 999_999}
	p.StrayKey = l.Key(tp, &stray, layout.LocalLog)
	if err := write(p.StrayKey); err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	p.Started = rlmm.SegmentMetadata{ID: rlmm.SegmentID{TopicIDPartition: tp, ID: rlmm.RandomUuid()}, StartOffset: 1_000_000,
		EndOffset: 1_000_099, MaxTimestampMs: now, BrokerID: 1, EventTimestampMs: now,
		LeaderEpochs: []rlmm.EpochStart{{Epoch: 0, StartOffset: 1_000_000}}, SizeInBytes: 1000,
		State: rlmm.CopySegmentStarted, TxnIndexEmpty: true}
	for k := range layout.LocalTxnIndex {
		key := l.Key(tp, &p.Started, k)
		p.StartedKeys = append(p.StartedKeys, key)
		if err := write(key); err != nil {
			return nil, err
		}
	}
	slices.Sort(p.StartedKeys)
	return p, nil
}

// Check returns how the report of the plant's partition differs from the
// planted findings (nothing when every one is reported exactly).
func (p *LocalPlant) Check(pr *scrub.PartitionReport) []string {
	if pr == nil {
		return []string{"the planted partition " + p.TP.String() + " is not in the report"}
	}
	l, _ := layout.New(layout.LocalName, layout.Options{})
	key := func(m *rlmm.SegmentMetadata, k layout.Kind) string { return l.Key(p.TP, m, k) }
	var bad []string
	if len(pr.Missing) != 1 || pr.Missing[0].SegmentID != p.Lost.ID.ID.String() ||
		!slices.Equal(pr.Missing[0].Keys, []string{key(&p.Lost, layout.LocalLog)}) {
		bad = append(bad, fmt.Sprintf("missing = %+v, want only %s", pr.Missing, key(&p.Lost, layout.LocalLog)))
	}
	want := []scrub.Mismatch{
		{Kind: scrub.MismatchPartial, SegmentID: p.Partial.ID.ID.String(), MissingKeys: []string{key(&p.Partial, layout.LocalTimeIndex)}},
		{Kind: scrub.MismatchSize, SegmentID: p.Truncated.ID.ID.String(), Key: key(&p.Truncated, layout.LocalLog),
			Expected: int64(p.Truncated.SizeInBytes), Actual: p.TruncatedTo},
	}
	got := slices.Clone(pr.Mismatches)
	slices.SortFunc(got, func(a, b scrub.Mismatch) int { return strings.Compare(a.Kind, b.Kind) })
	if len(got) != 2 || !MismatchEqual(got[0], want[0]) || !MismatchEqual(got[1], want[1]) {
		bad = append(bad, fmt.Sprintf("mismatches = %+v, want %+v", got, want))
	}
	var deletable, protected []string
	for _, o := range pr.Orphans {
		switch {
		case o.Reason == scrub.ReasonNotInMetadata && !o.Protected:
			deletable = append(deletable, o.Key)
		case o.Reason == scrub.ReasonCopyStarted && o.Protected:
			protected = append(protected, o.Key)
		default:
			bad = append(bad, fmt.Sprintf("unexpected orphan %+v", o))
		}
	}
	slices.Sort(protected)
	if !slices.Equal(deletable, []string{p.StrayKey}) || !slices.Equal(protected, p.StartedKeys) {
		bad = append(bad, fmt.Sprintf("orphans: deletable %v (want [%s]), copy_started %v (want %v)", deletable, p.StrayKey, protected, p.StartedKeys))
	}
	return bad
}

// MismatchEqual reports whether two mismatches are the same.
func MismatchEqual(a, b scrub.Mismatch) bool {
	return a.Kind == b.Kind && a.SegmentID == b.SegmentID && a.Key == b.Key && a.Expected == b.Expected &&
		a.Actual == b.Actual && slices.Equal(a.MissingKeys, b.MissingKeys)
}

// Files returns the files under the plant's root as sorted '/' keys.
func (p *LocalPlant) Files() ([]string, error) {
	var keys []string
	err := filepath.WalkDir(p.Root, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(p.Root, path)
		keys = append(keys, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(keys)
	return keys, err
}
