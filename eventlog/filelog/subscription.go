package filelog

import (
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// Limits of one Poll, so a subscriber replaying a long partition gets it in
// digestible batches.
const (
	maxPollRecords = 4096
	maxPollBytes   = 4 << 20
)

// collect is the cursor.Collect of the log's subscriptions: it reads the
// segment files directly at the subscription's next offsets, within the
// Poll limits, buffering nothing, so Add and Remove are exact by
// construction. With nothing available it returns the channel to wait on.
func (l *Log) collect(next iter.Seq2[int32, int64]) ([]eventlog.Record, <-chan struct{}, error) {
	l.files.RLock()
	defer l.files.RUnlock()
	// Take the wake-up channel before reading, so an append that lands
	// after the read still wakes us.
	l.mu.Lock()
	closed, appended := l.closed, l.appended
	l.mu.Unlock()
	if closed {
		return nil, nil, fmt.Errorf("filelog: poll: log %w", rlmm.ErrClosed)
	}
	var recs []eventlog.Record
	budgetRecs, budgetBytes := maxPollRecords, maxPollBytes
	for p, from := range next {
		if budgetRecs <= 0 || budgetBytes <= 0 {
			break
		}
		got, err := l.read(l.parts[p], from, budgetRecs, budgetBytes)
		if err != nil {
			if len(recs) > 0 {
				break // deliver what we have; the error comes back next Poll
			}
			return nil, nil, err
		}
		for _, r := range got {
			budgetBytes -= len(r.Value) + frameHeaderSize
		}
		budgetRecs -= len(got)
		recs = append(recs, got...)
	}
	if len(recs) == 0 {
		return nil, appended, nil
	}
	return recs, nil, nil
}

// read returns durable records of p from offset on, at most maxRecs of them
// and about maxBytes (at least one record if any is available). The values
// are fresh memory owned by the caller.
func (l *Log) read(p *partition, from int64, maxRecs, maxBytes int) ([]eventlog.Record, error) {
	p.mu.Lock()
	hwm := p.hwm
	if from >= hwm {
		p.mu.Unlock()
		return nil, nil
	}
	if p.overlay != nil && from >= p.overlayBase {
		// Read-only: records recovered from the journal only.
		var recs []eventlog.Record
		for o := from; o < hwm && len(recs) < maxRecs && maxBytes > 0; o++ {
			v := p.overlay[o-p.overlayBase]
			recs = append(recs, eventlog.Record{Partition: p.id, Offset: o, Value: append([]byte(nil), v...)})
			maxBytes -= len(v)
		}
		p.mu.Unlock()
		return recs, nil
	}
	i := findSegment(p.segs, from)
	if i < 0 {
		p.mu.Unlock()
		return nil, fmt.Errorf("filelog: partition %d has no segment holding offset %d: %w", p.id, from, rlmm.ErrCorrupt)
	}
	seg := p.segs[i]
	end := hwm // first offset not in this segment (or not durable)
	if i+1 < len(p.segs) && p.segs[i+1].base < end {
		end = p.segs[i+1].base
	}
	if p.overlay != nil && p.overlayBase < end {
		end = p.overlayBase
	}
	p.mu.Unlock()

	seg.mu.Lock()
	if !seg.indexed {
		if err := seg.buildIndex(p.id, end-seg.base); err != nil {
			seg.mu.Unlock()
			return nil, err
		}
	}
	if from < seg.idxBase {
		if err := seg.buildPrefix(p.id); err != nil {
			seg.mu.Unlock()
			return nil, err
		}
	}
	first := from - seg.idxBase
	last := min(end-seg.idxBase, int64(len(seg.pos))) // exclusive
	if first >= last {
		seg.mu.Unlock()
		return nil, nil
	}
	startPos := int64(seg.pos[first])
	n := first + 1
	for n < last && n-first < int64(maxRecs) && int64(seg.pos[n])-startPos < int64(maxBytes) {
		n++
	}
	endPos := seg.size
	if n < int64(len(seg.pos)) {
		endPos = int64(seg.pos[n])
	}
	f := seg.f
	seg.mu.Unlock()

	buf := make([]byte, endPos-startPos)
	if _, err := f.ReadAt(buf, startPos); err != nil {
		return nil, fmt.Errorf("filelog: reading %s bytes %d-%d: %w", seg.path, startPos, endPos, err)
	}
	recs := make([]eventlog.Record, 0, n-first)
	var pos int64
	for o := from; o < seg.idxBase+n; o++ {
		payload, next, err := readFrame(buf, pos, uint64(o))
		if err != nil {
			return nil, fmt.Errorf("filelog: %s: partition %d offset %d: %w", seg.path, p.id, o, shiftFrameError(err, startPos))
		}
		// Cap each value so an append by the receiver cannot spill into
		// the next one.
		recs = append(recs, eventlog.Record{Partition: p.id, Offset: o, Value: payload[:len(payload):len(payload)]})
		pos = next
	}
	return recs, nil
}

// shiftFrameError makes a frame error's position relative to the file.
func shiftFrameError(err error, by int64) error {
	if fe, ok := isFrameError(err); ok {
		c := *fe
		c.Pos += by
		return &c
	}
	return err
}

// buildIndex reads a whole segment that recovery did not scan, checks its
// frames' lengths (each record's checksum is checked when it is read), and
// records their positions. want is the record count the next
// segment's name implies. The caller holds seg.mu.
func (seg *segment) buildIndex(partition int32, want int64) error {
	data, err := readAll(seg.f)
	if err != nil {
		return fmt.Errorf("filelog: reading %s: %w", seg.path, err)
	}
	pos, count, end, err := indexFrames(data, make([]uint32, 0, want))
	if err != nil {
		return fmt.Errorf("filelog: %s: partition %d offset %d: %w", seg.path, partition, seg.base+count, err)
	}
	if count != want {
		return fmt.Errorf("filelog: %s: partition %d: segment holds %d records (offsets %d-%d) but the next segment starts at offset %d: %w",
			seg.path, partition, count, seg.base, seg.base+count-1, seg.base+want, rlmm.ErrCorrupt)
	}
	seg.pos, seg.size, seg.idxBase, seg.indexed = pos, end, seg.base, true
	return nil
}

// buildPrefix indexes the checkpointed records of a segment that Open
// scanned only from its checkpoint on (their lengths; each checksum is
// checked when the record is read). The caller holds seg.mu.
func (seg *segment) buildPrefix(partition int32) error {
	data := make([]byte, seg.prefixBytes)
	if n, err := seg.f.ReadAt(data, 0); err != nil && !(err == io.EOF && int64(n) == seg.prefixBytes) {
		return fmt.Errorf("filelog: reading the first %d bytes of %s: %w", seg.prefixBytes, seg.path, err)
	}
	want := seg.idxBase - seg.base
	pos, count, end, err := indexFrames(data, make([]uint32, 0, want+int64(len(seg.pos))))
	if err != nil {
		return fmt.Errorf("filelog: %s: partition %d offset %d: %w", seg.path, partition, seg.base+count, err)
	}
	if count != want || end != seg.prefixBytes {
		return fmt.Errorf("filelog: %s: partition %d: the first %d bytes hold %d records, but the checkpoint says %d: %w",
			seg.path, partition, seg.prefixBytes, count, want, rlmm.ErrCorrupt)
	}
	seg.pos = append(pos, seg.pos...)
	seg.idxBase, seg.prefixBytes = seg.base, 0
	return nil
}

// readAll reads a whole file through its handle.
func readAll(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if err == io.EOF {
		err = nil
	}
	return data[:n], err
}
