package view

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/wire"
)

// keyUse is what the records of one record key (KIP-1266's keys, which a
// compacted metadata topic reduces to the last record of each) say.
type keyUse struct {
	tp rlmm.TopicIDPartition
	// ids are the distinct segments named by the key's records, in the
	// order first seen (a partition delete names none).
	ids []rlmm.Uuid
	// last is what the key's last record names: a segment id, ZeroUuid
	// for a partition delete, and tombstone set for a tombstone (at
	// lastRef).
	last      rlmm.Uuid
	tombstone bool
	lastRef   RecordRef
}

// observeKey follows the key of a decoded record of user partition tp: a
// key that does not parse or does not match its record is a warning, and
// the key's use is kept for keyAnomalies. Records without a key (what
// released Kafka and rlmm write) are not followed.
func (b *Builder) observeKey(rec *eventlog.Record, ref *RecordRef, ev *wire.Event, tp rlmm.TopicIDPartition) {
	if rec.Key == nil || ev.Key == wire.KeySnapshot {
		return
	}
	k, err := wire.ParseRecordKey(rec.Key)
	if err != nil {
		b.anomalies = append(b.anomalies, Anomaly{Kind: RecordKeyMismatch, Warning: true, Record: ref, TopicIDPartition: tp.String(),
			Detail: fmt.Sprintf("record key %q: %v", rec.Key, err)})
	} else if why := ev.KeyMismatch(k); why != "" {
		b.anomalies = append(b.anomalies, Anomaly{Kind: RecordKeyMismatch, Warning: true, Record: ref, TopicIDPartition: tp.String(),
			Detail: fmt.Sprintf("record key %q does not match its %s: %s", rec.Key, ev.Key, why)})
	}
	u := b.keyUse(rec.Key, tp)
	id, _ := segmentOf(ev)
	if id != rlmm.ZeroUuid && !slices.Contains(u.ids, id) {
		u.ids = append(u.ids, id)
	}
	u.last, u.tombstone, u.lastRef = id, false, *ref
}

// observeTombstone follows a tombstone: one whose key is not a KIP-1266
// key is a warning (a compacted topic cannot use it); one that is becomes
// its key's last record.
func (b *Builder) observeTombstone(rec *eventlog.Record, ref *RecordRef) {
	k, err := wire.ParseRecordKey(rec.Key)
	if rec.Key == nil || err != nil {
		why := "it has no key"
		if rec.Key != nil {
			why = fmt.Sprintf("its key %q is not a KIP-1266 record key: %v", rec.Key, err)
		}
		b.anomalies = append(b.anomalies, Anomaly{Kind: TombstoneRecord, Warning: true, Record: ref,
			Detail: "a record with a null value (a tombstone, as a compacted metadata topic holds) that deletes nothing rlmm knows, since " + why + ": skipped"})
		return
	}
	u := b.keyUse(rec.Key, k.TopicIDPartition)
	u.last, u.tombstone, u.lastRef = rlmm.ZeroUuid, true, *ref
}

func (b *Builder) keyUse(key []byte, tp rlmm.TopicIDPartition) *keyUse {
	if b.keys == nil {
		b.keys = map[string]*keyUse{}
	}
	u := b.keys[string(key)]
	if u == nil {
		u = &keyUse{tp: tp}
		b.keys[string(key)] = u
	}
	return u
}

// keyAnomalies finds the keys whose compaction would drop the history of a
// segment still live in the view: compaction keeps only a key's last
// record, so a live segment named by a key whose last record is another
// segment's (two segments sharing a key: KIP-1266's keys carry no segment
// id) or a tombstone loses that record when the cleaner runs. Keys in
// text order.
func (b *Builder) keyAnomalies() []Anomaly {
	if len(b.keys) == 0 {
		return nil
	}
	live := map[rlmm.TopicIDPartition]map[rlmm.Uuid]rlmm.SegmentState{}
	liveOf := func(tp rlmm.TopicIDPartition) map[rlmm.Uuid]rlmm.SegmentState {
		m, ok := live[tp]
		if !ok {
			m = map[rlmm.Uuid]rlmm.SegmentState{}
			for _, s := range b.Segments(tp) {
				m[s.ID.ID] = s.State
			}
			live[tp] = m
		}
		return m
	}
	keys := make([]string, 0, len(b.keys))
	for k := range b.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Anomaly
	for _, key := range keys {
		u := b.keys[key]
		states := liveOf(u.tp)
		var dropped []string
		for _, id := range u.ids {
			if st, ok := states[id]; ok && (u.tombstone || id != u.last) {
				dropped = append(dropped, fmt.Sprintf("%s (%s)", id, st))
			}
		}
		if len(dropped) == 0 {
			continue
		}
		a := Anomaly{TopicIDPartition: u.tp.String(), Record: ptr(u.lastRef)}
		for _, id := range u.ids {
			a.SegmentIDs = append(a.SegmentIDs, id.String())
		}
		if u.tombstone {
			a.Kind = TombstonedLiveSegment
			a.Detail = fmt.Sprintf("the last record of key %q is a tombstone, but live segment %s has records under it: "+
				"compaction would delete them and drop its history", key, strings.Join(dropped, ", "))
		} else {
			a.Kind = SharedRecordKey
			a.Detail = fmt.Sprintf("key %q names segments %s (KIP-1266's keys carry no segment id), and its last record is %s: "+
				"compaction would keep only that one and drop the history of live segment %s", key, strings.Join(a.SegmentIDs, ", "), lastName(u.last), strings.Join(dropped, ", "))
		}
		out = append(out, a)
	}
	return out
}

func lastName(id rlmm.Uuid) string {
	if id == rlmm.ZeroUuid {
		return "a partition delete's"
	}
	return "segment " + id.String() + "'s"
}
